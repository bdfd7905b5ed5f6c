#!/usr/bin/python3
"""Does the input keep up with the GPU? (issue 38 §2's goal.) A PyTorch
training loop — ResNet-18 or ResNet-50, bf16 autocast, channels_last, SGD,
batch 256, the train recipe at 224 — timed on the same model and GPU with
its batches from:

  resident      one batch already on the GPU, reused (the ceiling: what
                the model takes when the input costs nothing)
  faster-cuda   faster.Loader(device="cuda"): decoded on the GPU by
                `faster serve`'s nvJPEG stage, handed over by CUDA IPC
  faster-both   the same with cpu_share=--cpu-share (0.25): that share of
                each batch decoded on the CPU workers beside the GPU
  faster-pinned faster.Loader(layout="u8-hwc", pin_memory=True): decoded on
                the CPU workers, .cuda(non_blocking=True) from the pinned
                ring, normalised on the GPU
  torchvision   ImageFolder + DataLoader(num_workers=W, pin_memory=True),
                the peer, .cuda(non_blocking=True)

Each prints images/s (over the timed steps, after WARMUP steps) and its
share of the resident rate; the goal is >= 0.95 for ResNet-18 and >= 0.98
for ResNet-50 with one of the faster ways. JSON lines go to stdout, a
table last.

PREPARED, NOT YET RUN on a GPU (scripts/h200.sh bench runs it there). Its
flow runs here on the CPU with --device cpu and a tiny resolution (the
numbers then mean nothing):
    PYTHONPATH=python FASTER_BIN=bin/faster /usr/bin/python3 bench/gpu_feed.py DIR \\
        --device cpu --models resnet18 --resolution 32 --steps 3 --warmup 1 --batch 8 --ways resident,faster-pinned,torchvision
"""
import argparse
import json
import os
import time

import torch
import torchvision

import faster

MEAN = (0.485, 0.456, 0.406)
STD = (0.229, 0.224, 0.225)


def model_for(name, device):
    m = getattr(torchvision.models, name)(num_classes=1000).to(device)
    return m.to(memory_format=torch.channels_last)


def train_steps(model, batches, steps, warmup, device, amp):
    """Runs warmup+steps SGD steps on batches (an iterator of (x, y) already
    on device, float NCHW normalised); returns images/s of the timed ones."""
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, weight_decay=1e-4)
    loss_fn = torch.nn.CrossEntropyLoss()
    n = 0
    t0 = None
    for i in range(warmup + steps):
        if i == warmup:
            sync(device)
            t0 = time.perf_counter()
        x, y = next(batches)
        x = x.contiguous(memory_format=torch.channels_last)
        with torch.autocast(device_type=device.type, dtype=torch.bfloat16, enabled=amp):
            loss = loss_fn(model(x), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        if i >= warmup:
            n += x.shape[0]
    sync(device)
    return n / (time.perf_counter() - t0)


def sync(device):
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def endless(make):
    """Epoch after epoch of make(epoch)'s batches."""
    e = 0
    while True:
        for b in make(e):
            yield b
        e += 1


def way_batches(way, a, device):
    if way == "resident":
        x = torch.randn(a.batch, 3, a.resolution, a.resolution, device=device)
        y = torch.randint(0, 1000, (a.batch,), device=device)
        while True:
            yield x, y
    if way in ("faster-cuda", "faster-both"):
        share = a.cpu_share if way == "faster-both" else 0.0
        ld = faster.Loader(a.data, batch_size=a.batch, transform="train", resolution=a.resolution,
                           workers=a.workers, device=str(device), cpu_share=share, drop_last=True, seed=1)

        def make(e):
            ld.set_epoch(e)
            for x, y in ld:
                yield x, y.to(device, non_blocking=True)
        try:
            yield from endless(make)
        finally:
            ld.close()
    if way == "faster-pinned":
        ld = faster.Loader(a.data, batch_size=a.batch, transform="train", resolution=a.resolution,
                           workers=a.workers, layout="u8-hwc", pin_memory=device.type == "cuda", drop_last=True, seed=1)

        def make(e):
            ld.set_epoch(e)
            for x, y in ld:
                yield faster.normalize(x.to(device, non_blocking=True)), y.to(device, non_blocking=True)  # f32-chw's values, channels-last memory
        try:
            yield from endless(make)
        finally:
            ld.close()
    if way == "torchvision":
        from torchvision import transforms as T
        tf = T.Compose([T.RandomResizedCrop(a.resolution), T.RandomHorizontalFlip(), T.ToTensor(), T.Normalize(MEAN, STD)])
        ds = torchvision.datasets.ImageFolder(a.data, tf)
        dl = torch.utils.data.DataLoader(ds, batch_size=a.batch, shuffle=True, num_workers=a.workers,
                                         pin_memory=device.type == "cuda", drop_last=True, persistent_workers=True)

        def make(e):
            for x, y in dl:
                yield x.to(device, non_blocking=True), y.to(device, non_blocking=True)
        yield from endless(make)
    raise ValueError("unknown way %r" % way)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("data", help="an ImageFolder tree (bench/imagenet_like.py makes one)")
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--models", default="resnet18,resnet50")
    ap.add_argument("--ways", default="resident,faster-cuda,faster-both,faster-pinned,torchvision")
    ap.add_argument("--cpu-share", type=float, default=0.25, help="faster-both's share of each batch decoded on the CPU")
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--resolution", type=int, default=224)
    ap.add_argument("--workers", type=int, default=os.cpu_count())
    ap.add_argument("--steps", type=int, default=40)
    ap.add_argument("--warmup", type=int, default=10)
    ap.add_argument("--no-amp", action="store_true")
    a = ap.parse_args()
    device = torch.device(a.device)
    if device.type == "cuda":
        torch.backends.cudnn.benchmark = True
    rows = []
    for name in a.models.split(","):
        resident = None
        for way in a.ways.split(","):
            torch.manual_seed(0)
            model = model_for(name, device)
            gen = way_batches(way, a, device)
            row = {"model": name, "way": way, "batch": a.batch, "resolution": a.resolution, "workers": a.workers,
                   "device": str(device), "amp": "bf16" if not a.no_amp else "fp32"}
            try:
                rate = train_steps(model, gen, a.steps, a.warmup, device, not a.no_amp)
                row["images_per_sec"] = round(rate, 1)
                if way == "resident":
                    resident = rate
                if resident:
                    row["of_resident"] = round(rate / resident, 3)
            except Exception as e:  # one way failing does not stop the others
                row["error"] = "%s: %s" % (type(e).__name__, e)
            finally:
                gen.close()
                del model
                if device.type == "cuda":
                    torch.cuda.empty_cache()
            print(json.dumps(row), flush=True)
            rows.append(row)
    print("%-9s %-14s %12s %12s" % ("model", "way", "images/s", "of resident"))
    goal = {"resnet18": 0.95, "resnet50": 0.98}
    for r in rows:
        share = r.get("of_resident")
        mark = ""
        if share is not None and r["way"].startswith("faster") and r["model"] in goal:
            mark = "  goal %.2f %s" % (goal[r["model"]], "met" if share >= goal[r["model"]] else "MISSED")
        print("%-9s %-14s %12s %12s%s" % (r["model"], r["way"], r.get("images_per_sec", "-"),
                                         share if share is not None else r.get("error", "-")[:40], mark))


if __name__ == "__main__":
    main()
