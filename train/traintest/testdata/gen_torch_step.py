#!/usr/bin/python3
"""Writes torch_step.json: two SGD steps of a small ThinNet in PyTorch, the
reference that train's backends are checked against (traintest.TorchStep).

Run with Debian's python3-torch (1.13): /usr/bin/python3 gen_torch_step.py
The model is the study's ThinNet (3x3 conv without padding or bias -> ReLU ->
BatchNorm, per stage one widening conv then `blocks` more, adaptive average
pool 2x2, linear) at a small width so the file stays small.
"""
import base64
import json
import struct

import torch
import torch.nn as nn

torch.manual_seed(5)
torch.set_num_threads(1)

CFG = {"in_channels": 1, "classes": 10, "filters": [4, 8, 16], "blocks": [2, 1, 1],
       "batch": 6, "size": 18, "lr": 0.05, "momentum": 0.9, "weight_decay": 0.001}


def thinnet(cfg):
    layers, cin = [], cfg["in_channels"]
    for f, b in zip(cfg["filters"], cfg["blocks"]):
        for _ in range(1 + b):
            layers += [nn.Conv2d(cin, f, 3, bias=False), nn.ReLU(inplace=True), nn.BatchNorm2d(f)]
            cin = f
    return nn.Sequential(*layers, nn.AdaptiveAvgPool2d((2, 2)), nn.Flatten(), nn.Linear(cin * 4, cfg["classes"]))


def flat(t):
    """float32 little-endian, base64: compact and exact."""
    v = t.detach().reshape(-1).tolist()
    return base64.b64encode(struct.pack("<%df" % len(v), *v)).decode()


model = thinnet(CFG)
# Non-trivial BatchNorm affine parameters so their gradients matter.
for m in model.modules():
    if isinstance(m, nn.BatchNorm2d):
        nn.init.uniform_(m.weight, 0.5, 1.5)
        nn.init.uniform_(m.bias, -0.2, 0.2)
x = torch.randn(CFG["batch"], CFG["in_channels"], CFG["size"], CFG["size"])
y = torch.randint(0, CFG["classes"], (CFG["batch"],))
params = [p for p in model.parameters()]
buffers = [b for n, b in model.named_buffers() if not n.endswith("num_batches_tracked")]
out = {"config": CFG, "x": flat(x), "labels": [int(v) for v in y],
       "params": [flat(p) for p in params], "shapes": [list(p.shape) for p in params]}

opt = torch.optim.SGD(model.parameters(), lr=CFG["lr"], momentum=CFG["momentum"], weight_decay=CFG["weight_decay"])
loss_fn = nn.CrossEntropyLoss()
steps = []
for step in range(2):
    opt.zero_grad()
    model.train()
    logits = model(x)
    loss = loss_fn(logits, y)
    loss.backward()
    rec = {"loss": float(loss), "logits": flat(logits)}
    if step == 0:
        rec["grads"] = [flat(p.grad) for p in params]
    opt.step()
    steps.append(rec)
out["params_after"] = [flat(p) for p in params]
out["buffers_after"] = [flat(b) for b in buffers]
out["steps"] = steps
model.eval()
with torch.no_grad():  # eval mode: running statistics
    out["eval_logits"] = flat(model(x))

with open("torch_step.json", "w") as f:
    json.dump(out, f, separators=(",", ":"))
print("wrote torch_step.json: loss", steps[0]["loss"], "->", steps[1]["loss"])
