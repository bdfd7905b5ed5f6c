#!/usr/bin/python3
"""PyTorch CPU peer of `faster train`: the seed's ThinNet on Fashion-MNIST.

Same model (3x3 conv without padding or bias -> ReLU -> BatchNorm; filters
32/64/128, blocks 2/2/2; adaptive average pool 2x2; linear), same data
(IDX files, pixels/255 normalised with mean 0.2860, std 0.3530), same
optimiser (SGD, momentum, no weight decay by default), same batching (a
random permutation per epoch, last partial batch dropped). The dataset is
preloaded as one tensor so no DataLoader overhead is measured: this is
PyTorch's fastest path. Prints a JSON summary with the same keys as
`faster train --json` (images_per_sec, test_accuracy, seconds, epochs).

--ddp N runs N processes of torch DistributedDataParallel over gloo
(--threads split between them; rank r trains on part r of each global
batch, as `faster train --strategy ddp` does); --amp runs the forward pass
under torch.autocast("cpu", dtype=torch.bfloat16).

Run with Debian's python3-torch: /usr/bin/python3 bench/peer_thinnet_torch.py --data DIR
"""
import argparse
import gzip
import json
import os
import sys
import time

import numpy as np
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn


def read_idx(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rb") as f:
        data = f.read()
    ndim = data[3]
    dims = [int.from_bytes(data[4 + 4 * i:8 + 4 * i], "big") for i in range(ndim)]
    return np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * ndim).reshape(dims)


def find(d, name):
    for ext in ("", ".gz"):
        p = os.path.join(d, name + ext)
        if os.path.exists(p):
            return p
    sys.exit("no %s[.gz] in %s" % (name, d))


def load(d, prefix, limit):
    x = read_idx(find(d, prefix + "-images-idx3-ubyte"))
    y = read_idx(find(d, prefix + "-labels-idx1-ubyte"))
    if limit:
        x, y = x[:limit], y[:limit]
    x = (torch.from_numpy(x.astype(np.float32)) / 255 - 0.2860) / 0.3530
    return x.unsqueeze(1).contiguous(), torch.from_numpy(y.astype(np.int64))


def thinnet(in_channels=1, classes=10, filters=(32, 64, 128), blocks=(2, 2, 2)):
    layers, cin = [], in_channels
    for f, b in zip(filters, blocks):
        for _ in range(1 + b):
            layers += [nn.Conv2d(cin, f, 3, bias=False), nn.ReLU(inplace=True), nn.BatchNorm2d(f)]
            cin = f
    return nn.Sequential(*layers, nn.AdaptiveAvgPool2d((2, 2)), nn.Flatten(), nn.Linear(cin * 4, classes))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", default="/usr/share/datasets/fashion-mnist")
    ap.add_argument("--epochs", type=int, default=1)
    ap.add_argument("--batch", type=int, default=512)
    ap.add_argument("--lr", type=float, default=0.001)
    ap.add_argument("--momentum", type=float, default=0.9)
    ap.add_argument("--weight-decay", type=float, default=0.0)
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--limit", type=int, default=0)
    ap.add_argument("--test-limit", type=int, default=0)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--ddp", type=int, default=0, help="processes of DistributedDataParallel (gloo)")
    ap.add_argument("--amp", action="store_true", help="bf16 autocast")
    ap.add_argument("--port", type=int, default=29533)
    a = ap.parse_args()
    if a.ddp > 1:
        mp.spawn(run, args=(a,), nprocs=a.ddp)
    else:
        run(0, a)


def run(rank, a):
    world = max(a.ddp, 1)
    if world > 1:
        os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
        os.environ.setdefault("MASTER_PORT", str(a.port))
        dist.init_process_group("gloo", rank=rank, world_size=world)
    torch.set_num_threads(max(1, a.threads // world))
    torch.manual_seed(a.seed)
    xtr, ytr = load(a.data, "train", a.limit)
    xte, yte = load(a.data, "t10k", a.test_limit)
    model = thinnet()
    net = torch.nn.parallel.DistributedDataParallel(model) if world > 1 else model
    opt = torch.optim.SGD(model.parameters(), lr=a.lr, momentum=a.momentum, weight_decay=a.weight_decay)
    loss_fn = nn.CrossEntropyLoss()
    steps = len(xtr) // a.batch
    local = a.batch // world
    images, seconds, per_epoch = 0, 0.0, []
    for epoch in range(a.epochs):
        model.train()
        perm = torch.randperm(len(xtr))  # same seed on every rank: the same global batches
        t0, tot = time.perf_counter(), 0.0
        for s in range(steps):
            idx = perm[s * a.batch + rank * local:s * a.batch + (rank + 1) * local]
            x, y = xtr[idx], ytr[idx]
            opt.zero_grad(set_to_none=True)
            with torch.autocast("cpu", dtype=torch.bfloat16, enabled=a.amp):
                loss = loss_fn(net(x), y)
            loss.backward()
            opt.step()
            tot += float(loss)
        dt = time.perf_counter() - t0
        images += steps * a.batch
        seconds += dt
        model.eval()
        correct = 0
        with torch.no_grad(), torch.autocast("cpu", dtype=torch.bfloat16, enabled=a.amp):
            for i in range(0, len(xte), a.batch):
                correct += int((model(xte[i:i + a.batch]).argmax(1) == yte[i:i + a.batch]).sum())
        acc = correct / len(xte)
        per_epoch.append({"epoch": epoch + 1, "train_loss": tot / max(steps, 1), "test_accuracy": acc,
                          "images": steps * a.batch, "seconds": dt, "images_per_sec": steps * a.batch / dt})
    if rank == 0:
        print(json.dumps({"model": "thinnet", "backend": "pytorch-%s" % torch.__version__, "threads": a.threads,
                          "strategy": "ddp" if world > 1 else "single", "world_size": world, "amp": a.amp,
                          "batch": a.batch, "lr": a.lr, "epochs": a.epochs, "images": images, "seconds": seconds,
                          "images_per_sec": images / seconds, "test_accuracy": per_epoch[-1]["test_accuracy"],
                          "per_epoch": per_epoch}, indent=2))
    if world > 1:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
