#!/usr/bin/python3
"""Writes bnstats.json: what torch.optim.swa_utils.update_bn computes for a
small ThinNet (3 input channels; stages of 4 and 5 filters, one 3x3
convolution each, conv -> ReLU -> BatchNorm; adaptive average pool 2x2;
linear to 3 classes), the oracle of train.RecalibrateBN's test
(bnstats_test.go):

  params, buffers  the model's tensors in faster's order (state_dict order),
                   the buffers being stale running statistics update_bn
                   must reset
  batches          three input batches of 4, 4 and 2 images (update_bn
                   weighs each batch once, whatever its size)
  running          every BatchNorm's running_mean then running_var after
                   update_bn(batches, model)
  test_x, logits   a batch evaluated (model.eval()) after update_bn

Run with Debian's python3-torch (1.13): /usr/bin/python3 gen_bnstats.py
"""
import json
import os

import torch
import torch.nn as nn

torch.manual_seed(4)
torch.set_num_threads(1)


def vals(t):
    return [float("%.9g" % v) for v in t.detach().reshape(-1).tolist()]  # float32 round-trips in 9 digits


class Block(nn.Module):
    def __init__(self, cin, cout):
        super().__init__()
        self.conv = nn.Conv2d(cin, cout, 3, bias=False)
        self.relu = nn.ReLU()
        self.bn = nn.BatchNorm2d(cout)

    def forward(self, x):
        return self.bn(self.relu(self.conv(x)))


class Thin(nn.Module):
    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(Block(3, 4), Block(4, 5))
        self.pool = nn.AdaptiveAvgPool2d((2, 2))
        self.fc = nn.Linear(5 * 4, 3)

    def forward(self, x):
        return self.fc(torch.flatten(self.pool(self.features(x)), 1))


m = Thin()
with torch.no_grad():
    for mod in m.modules():
        if isinstance(mod, nn.BatchNorm2d):
            mod.weight.copy_(torch.rand(mod.num_features) + 0.5)
            mod.bias.copy_(torch.randn(mod.num_features) * 0.3)
            mod.running_mean.copy_(torch.randn(mod.num_features))  # stale: update_bn resets them
            mod.running_var.copy_(torch.rand(mod.num_features) + 2)
params = [vals(p) for p in m.parameters()]
buffers = [vals(b) for n, b in m.named_buffers() if not n.endswith("num_batches_tracked")]
batches = [torch.randn(n, 3, 12, 12) * 1.5 + 0.4 for n in (4, 4, 2)]
torch.optim.swa_utils.update_bn(batches, m)
running = [vals(b) for n, b in m.named_buffers() if not n.endswith("num_batches_tracked")]
momenta = [mod.momentum for mod in m.modules() if isinstance(mod, nn.BatchNorm2d)]
m.eval()
test_x = torch.randn(3, 3, 12, 12)
with torch.no_grad():
    logits = m(test_x)
out = {"params": params, "buffers": buffers, "batches": [{"n": int(b.shape[0]), "x": vals(b)} for b in batches],
       "running": running, "momenta": momenta, "test_x": vals(test_x), "logits": vals(logits)}
with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "bnstats.json"), "w") as f:
    json.dump(out, f)
