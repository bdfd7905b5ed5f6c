#!/usr/bin/python3
"""PyTorch CPU peer of `faster train` on an ImageFolder of photographs,
with FixRes's test-resolution adjustment of the BatchNorm statistics.

    peer_fixres_torch.py --data TRAIN --test-data TEST [--resolution 224]
        [--resolution-schedule 128] [--fixres-bn N] [--model resnet18]
        [--filters 8,16,32,64] ...

The same model as `faster train --model resnet18 --filters W1,W2,W3,W4`
(torchvision's ResNet-18 — 7x7 stride-2 stem, max pool, BasicBlocks
[2,2,2,2], 1x1 stride-2 projection shortcuts, adaptive average pool,
linear; convolutions initialised normal with std sqrt(2/fan_out) — with
the four stage widths given) or `--model thinnet` (faster's ThinNet on 3
channels), the same recipes as faster's loader: training images through
RandomResizedCrop(train side) + RandomHorizontalFlip + Normalize(ImageNet
mean and std), a fresh permutation per epoch, last partial batch dropped;
test images through Resize(side*256/224) + CenterCrop(side) at the test
side (--resolution). The same optimiser and schedule flags as `faster
train` (SGD with --momentum, --weight-decay, --nesterov; --schedule
constant or onecycle, torch's OneCycleLR stepped after every step;
--label-smoothing).

--resolution-schedule S1,S2,... trains epoch i at side S_min(i, last) and
tests at --resolution. --fixres-bn N then does what `faster train
--fixres-bn N` does: N batches of the training images at the test side
under the test recipe (shuffled, whole batches) through
torch.optim.swa_utils.update_bn (running statistics reset, cumulative
average: BatchNorm momentum=None), and evaluates again.

Input: a DataLoader with --workers processes (default --threads) decoding
with PIL, persistent across epochs; compute: torch.set_num_threads
(--threads). "seconds" is the training time, input included and
evaluation excluded, as `faster train`'s; fixres_bn.seconds the
recalibration's. The test split is evaluated after the last epoch only
(--eval-each-epoch: after each, as `faster train` does), outside the clock. Prints JSON with the keys of `faster train --json`.

Run with Debian's python3-torch: /usr/bin/python3 bench/peer_fixres_torch.py --data DIR --test-data DIR
"""
import argparse
import itertools
import json
import os
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F
import torchvision
import torchvision.transforms as T

MEAN, STD = [0.485, 0.456, 0.406], [0.229, 0.224, 0.225]


class BasicBlock(nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.relu = nn.ReLU(inplace=True)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.downsample = None
        if stride != 1 or cin != cout:
            self.downsample = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))

    def forward(self, x):
        out = self.bn2(self.conv2(self.relu(self.bn1(self.conv1(x)))))
        return self.relu(out + (x if self.downsample is None else self.downsample(x)))


class ResNet18(nn.Module):
    """torchvision.models.resnet18 with the stage widths as a parameter."""

    def __init__(self, widths=(64, 128, 256, 512), classes=1000):
        super().__init__()
        w0 = widths[0]
        self.conv1 = nn.Conv2d(3, w0, 7, 2, 3, bias=False)
        self.bn1 = nn.BatchNorm2d(w0)
        self.relu = nn.ReLU(inplace=True)
        self.maxpool = nn.MaxPool2d(3, 2, 1)
        cin, stages = w0, []
        for i, w in enumerate(widths):
            stride = 1 if i == 0 else 2
            stages.append(nn.Sequential(BasicBlock(cin, w, stride), BasicBlock(w, w, 1)))
            cin = w
        self.layer1, self.layer2, self.layer3, self.layer4 = stages
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.fc = nn.Linear(cin, classes)
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")

    def forward(self, x):
        x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
        x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
        return self.fc(torch.flatten(self.avgpool(x), 1))


def thinnet(classes, filters):
    layers, cin = [], 3
    for f in filters:
        for _ in range(3):
            layers += [nn.Conv2d(cin, f, 3, bias=False), nn.ReLU(inplace=True), nn.BatchNorm2d(f)]
            cin = f
    return nn.Sequential(*layers, nn.AdaptiveAvgPool2d((2, 2)), nn.Flatten(), nn.Linear(cin * 4, classes))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", required=True, help="ImageFolder of training images")
    ap.add_argument("--test-data", required=True, help="ImageFolder of test images")
    ap.add_argument("--model", default="resnet18", choices=["resnet18", "thinnet"])
    ap.add_argument("--filters", default="", help="stage widths (resnet18: four; default 64,128,256,512)")
    ap.add_argument("--resolution", type=int, default=224, help="test side (and training side without a schedule)")
    ap.add_argument("--resolution-schedule", default="", help="training side per epoch, e.g. 128")
    ap.add_argument("--fixres-bn", type=int, default=0, help="batches of BatchNorm recalibration at the test side")
    ap.add_argument("--epochs", type=int, default=1)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--lr", type=float, default=0.1)
    ap.add_argument("--momentum", type=float, default=0.9)
    ap.add_argument("--weight-decay", type=float, default=0.0)
    ap.add_argument("--nesterov", action="store_true")
    ap.add_argument("--label-smoothing", type=float, default=0.0)
    ap.add_argument("--schedule", default="constant", choices=["constant", "onecycle"])
    ap.add_argument("--pct-start", type=float, default=0.3)
    ap.add_argument("--div-factor", type=float, default=25.0)
    ap.add_argument("--final-div-factor", type=float, default=1e4)
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--workers", type=int, default=None, help="DataLoader processes (default: --threads)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--eval-each-epoch", action="store_true", help="evaluate after every epoch (default: after the last)")
    a = ap.parse_args()
    workers = a.threads if a.workers is None else a.workers
    torch.set_num_threads(a.threads)
    torch.manual_seed(a.seed)
    wall = time.perf_counter()

    norm = T.Normalize(MEAN, STD)
    full = a.resolution
    sched = [int(v) for v in a.resolution_schedule.split(",")] if a.resolution_schedule else []

    def train_tf(side):
        return T.Compose([T.RandomResizedCrop(side), T.RandomHorizontalFlip(), T.ToTensor(), norm])

    eval_tf = T.Compose([T.Resize(full * 256 // 224), T.CenterCrop(full), T.ToTensor(), norm])
    test_set = torchvision.datasets.ImageFolder(a.test_data, eval_tf)
    classes = len(torchvision.datasets.ImageFolder(a.data).classes)
    loaders = {}

    def train_loader(side):
        if side not in loaders:
            ds = torchvision.datasets.ImageFolder(a.data, train_tf(side))
            loaders[side] = torch.utils.data.DataLoader(ds, batch_size=a.batch, shuffle=True, drop_last=True, num_workers=workers,
                                                        persistent_workers=workers > 0)
        return loaders[side]

    test_loader = torch.utils.data.DataLoader(test_set, batch_size=a.batch, num_workers=workers)
    filters = [int(f) for f in a.filters.split(",")] if a.filters else None
    if a.model == "resnet18":
        model = ResNet18(filters or (64, 128, 256, 512), classes)
    else:
        model = thinnet(classes, filters or [32, 64, 128])
    opt = torch.optim.SGD(model.parameters(), lr=a.lr, momentum=a.momentum, weight_decay=a.weight_decay, nesterov=a.nesterov)
    loss_fn = nn.CrossEntropyLoss(label_smoothing=a.label_smoothing)
    n_train = len(torchvision.datasets.ImageFolder(a.data).samples)
    steps = n_train // a.batch
    sched_lr = None
    if a.schedule == "onecycle":
        sched_lr = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=a.lr, total_steps=a.epochs * steps, pct_start=a.pct_start,
                                                       div_factor=a.div_factor, final_div_factor=a.final_div_factor,
                                                       anneal_strategy="cos", cycle_momentum=False)

    def evaluate():
        model.eval()
        correct, correct5, loss, n, t0 = 0, 0, 0.0, 0, time.perf_counter()
        with torch.no_grad():
            for x, y in test_loader:
                out = model(x)
                loss += float(F.cross_entropy(out, y, reduction="sum"))
                correct += int((out.argmax(1) == y).sum())
                top = out.topk(min(5, out.shape[1]), 1).indices
                correct5 += int((top == y[:, None]).any(1).sum())
                n += len(y)
        model.train()
        return {"top1": correct / n, "top5": correct5 / n, "loss": loss / n, "seconds": time.perf_counter() - t0}

    images, seconds, per_epoch, eval_seconds, m = 0, 0.0, [], 0.0, None
    for epoch in range(a.epochs):
        side = sched[min(epoch, len(sched) - 1)] if sched else full
        model.train()
        t0, tot, k = time.perf_counter(), 0.0, 0
        for x, y in train_loader(side):
            opt.zero_grad(set_to_none=True)
            loss = loss_fn(model(x), y)
            loss.backward()
            opt.step()
            if sched_lr is not None:
                sched_lr.step()
            tot += float(loss)
            k += 1
        dt = time.perf_counter() - t0
        seconds += dt
        images += k * a.batch
        row = {"epoch": epoch + 1, "train_loss": tot / max(k, 1), "images": k * a.batch, "seconds": dt,
               "images_per_sec": k * a.batch / max(dt, 1e-9), "resolution": side}
        if a.eval_each_epoch or epoch == a.epochs - 1:
            m = evaluate()
            eval_seconds += m["seconds"]
            row.update({"test_loss": m["loss"], "test_accuracy": m["top1"], "test_top5": m["top5"]})
        per_epoch.append(row)
    out = {"model": a.model, "filters": filters, "backend": "pytorch-%s" % torch.__version__, "threads": a.threads, "workers": workers,
           "batch": a.batch, "lr": a.lr, "epochs": a.epochs, "classes": classes, "train_images": n_train, "test_images": len(test_set),
           "images": images, "seconds": seconds, "images_per_sec": images / max(seconds, 1e-9),
           "schedule": a.schedule, "label_smoothing": a.label_smoothing, "nesterov": a.nesterov, "resolution": full,
           "resolution_schedule": sched, "per_epoch": per_epoch}
    if a.fixres_bn > 0:
        t0 = time.perf_counter()
        calib_set = torchvision.datasets.ImageFolder(a.data, eval_tf)
        calib = torch.utils.data.DataLoader(calib_set, batch_size=a.batch, shuffle=True, drop_last=True, num_workers=workers)
        batches = list(itertools.islice(iter(calib), a.fixres_bn))  # the loader's workers stop with the iterator
        torch.optim.swa_utils.update_bn(batches, model)
        rec = time.perf_counter() - t0
        before = m
        m = evaluate()
        eval_seconds += m["seconds"]
        out["fixres_bn"] = {"resolution": full, "layers": sum(isinstance(x, nn.BatchNorm2d) for x in model.modules()),
                            "batches": len(batches), "images": sum(len(b[1]) for b in batches), "seconds": rec,
                            "test_accuracy_before": before["top1"], "test_top5_before": before["top5"],
                            "test_loss_before": before["loss"], "eval_seconds": m["seconds"]}
    out.update({"test_accuracy": m["top1"], "test_top5": m["top5"], "test_loss": m["loss"], "eval_seconds": eval_seconds,
                "wall_seconds": time.perf_counter() - wall})
    print(json.dumps(out, indent=2))
    sys.stdout.flush()
    os._exit(0)  # persistent DataLoader workers: leave without waiting on their shutdown


if __name__ == "__main__":
    main()
