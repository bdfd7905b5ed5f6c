#!/usr/bin/python3
"""Peer of `faster bench load --transform eval --profile`: torchvision's
evaluation recipe (Resize(256) + CenterCrop(224) + ToTensor + Normalize,
PIL's full decode as ImageFolder's loader does it) on one thread, each
sample timed by the thread's CPU clock (time.thread_time: user + system,
as ours), so a loaded machine does not inflate it.

Usage: /usr/bin/python3 bench/peer_eval_cost.py ROOT [--epochs 1]
Prints one JSON line: {"us_per_sample": ..., "samples": ...}.
"""
import argparse
import json
import time

import torch
from PIL import Image
from torchvision import datasets, transforms as T


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("root")
    ap.add_argument("--epochs", type=int, default=1)
    ap.add_argument("--resize", type=int, default=256)
    ap.add_argument("--resolution", type=int, default=224)
    a = ap.parse_args()
    torch.set_num_threads(1)
    tf = T.Compose([T.Resize(a.resize), T.CenterCrop(a.resolution), T.ToTensor(),
                    T.Normalize(mean=[0.485, 0.456, 0.406], std=[0.229, 0.224, 0.225])])
    ds = datasets.ImageFolder(a.root)
    total, n = 0.0, 0
    for _ in range(a.epochs):
        for path, _label in ds.samples:
            t = time.thread_time()
            with open(path, "rb") as f:
                img = Image.open(f).convert("RGB")
            tf(img)
            total += time.thread_time() - t
            n += 1
    print(json.dumps({"us_per_sample": total / n * 1e6, "samples": n}))


if __name__ == "__main__":
    main()
