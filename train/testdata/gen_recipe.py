#!/usr/bin/python3
"""Writes recipe.json: what PyTorch computes for each part of the fast
recipe that PyTorch defines, the reference train's recipe tests check
against (recipe_test.go):

  onecycle         torch.optim.lr_scheduler.OneCycleLR (cos anneal,
                   cycle_momentum=False): the rate of every step
  label_smoothing  nn.CrossEntropyLoss(label_smoothing=eps): loss and
                   d loss / d logits
  nesterov         torch.optim.SGD(nesterov=True, weight_decay): the
                   parameters after each of several steps
  ema              torch.optim.swa_utils.AveragedModel(use_buffers=True,
                   avg_fn=decay*avg + (1-decay)*p): the averaged parameters
                   and buffers after each update
  resize           F.interpolate(bilinear, antialias=True,
                   align_corners=False): progressive resizing's 28 -> 20

Run with Debian's python3-torch (1.13): /usr/bin/python3 gen_recipe.py
"""
import json
import os

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(15)
torch.set_num_threads(1)


def vals(t):
    return [float(v) for v in t.detach().reshape(-1).tolist()]


out = {}

# One-cycle: the rate each step trains at (read before opt.step, as the
# scheduler is stepped after it).
cycles = []
for cfg in [dict(max_lr=0.4, total_steps=25, pct_start=0.3, div_factor=25.0, final_div_factor=1e4),
            dict(max_lr=0.1, total_steps=17, pct_start=0.25, div_factor=10.0, final_div_factor=100.0),
            dict(max_lr=1.0, total_steps=7, pct_start=0.5, div_factor=4.0, final_div_factor=1e3)]:
    p = nn.Parameter(torch.zeros(1))
    opt = torch.optim.SGD([p], lr=cfg["max_lr"], momentum=0.9)
    s = torch.optim.lr_scheduler.OneCycleLR(opt, cycle_momentum=False, anneal_strategy="cos", **cfg)
    lrs = []
    for _ in range(cfg["total_steps"]):
        lrs.append(opt.param_groups[0]["lr"])
        opt.step()
        s.step()
    cycles.append(dict(cfg, lrs=lrs))
out["onecycle"] = cycles

# Label smoothing.
n, k, eps = 6, 7, 0.1
logits = (torch.randn(n, k) * 3).requires_grad_()
labels = torch.randint(0, k, (n,))
loss = nn.CrossEntropyLoss(label_smoothing=eps)(logits, labels)
loss.backward()
out["label_smoothing"] = {"eps": eps, "n": n, "k": k, "logits": vals(logits), "labels": [int(v) for v in labels],
                          "loss": float(loss), "grad": vals(logits.grad)}

# Nesterov SGD with weight decay, a different rate each step.
p = nn.Parameter(torch.randn(9))
init = vals(p)
opt = torch.optim.SGD([p], lr=0.1, momentum=0.9, nesterov=True, weight_decay=0.01)
grads, lrs, after = [], [0.1, 0.05, 0.2, 0.01], []
for lr in lrs:
    g = torch.randn(9)
    grads.append(vals(g))
    p.grad = g.clone()
    opt.param_groups[0]["lr"] = lr
    opt.step()
    after.append(vals(p))
out["nesterov"] = {"momentum": 0.9, "weight_decay": 0.01, "init": init, "lrs": lrs, "grads": grads, "after": after}


# EMA of parameters and buffers.
class M(nn.Module):
    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(torch.zeros(5))
        self.register_buffer("running_mean", torch.zeros(3))


decay = 0.9
m = M()
ema = torch.optim.swa_utils.AveragedModel(m, avg_fn=lambda avg, p, num: decay * avg + (1 - decay) * p, use_buffers=True)
models, averaged = [], []
for _ in range(4):
    with torch.no_grad():
        m.w.copy_(torch.randn(5))
        m.running_mean.copy_(torch.randn(3))
    models.append({"params": vals(m.w), "buffers": vals(m.running_mean)})
    ema.update_parameters(m)
    averaged.append({"params": vals(ema.module.w), "buffers": vals(ema.module.running_mean)})
out["ema"] = {"decay": decay, "models": models, "averaged": averaged}

# The same with TensorFlow's warm-up of the decay (num_updates).
decay = 0.99
m = M()
ema = torch.optim.swa_utils.AveragedModel(
    m, avg_fn=lambda avg, p, num: min(decay, (1 + float(num)) / (10 + float(num))) * avg + (1 - min(decay, (1 + float(num)) / (10 + float(num)))) * p,
    use_buffers=True)
averaged = []
for mod in models:
    with torch.no_grad():
        m.w.copy_(torch.tensor(mod["params"]))
        m.running_mean.copy_(torch.tensor(mod["buffers"]))
    ema.update_parameters(m)
    averaged.append({"params": vals(ema.module.w), "buffers": vals(ema.module.running_mean)})
out["ema_warmup"] = {"decay": decay, "models": models, "averaged": averaged}

# Progressive resizing: 28x28 -> 20x20.
x = torch.rand(1, 1, 28, 28)
y = F.interpolate(x, size=(20, 20), mode="bilinear", antialias=True, align_corners=False)
out["resize"] = {"n": 1, "c": 1, "h": 28, "w": 28, "oh": 20, "ow": 20, "x": vals(x), "y": vals(y)}

with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "recipe.json"), "w") as f:
    json.dump(out, f)
    f.write("\n")
