#!/usr/bin/python3
"""Peer of `faster bench load --profile`: torchvision's ImageFolder train
recipe on one thread, each sample's phases timed by the thread's CPU clock
(time.thread_time: user + system, as ours), so a loaded machine does not
inflate them:

  read               the file's bytes (ImageFolder's loader opens the path)
  decode             PIL Image.open(...).convert("RGB") (a full decode: no
                     draft mode, as torchvision's loader does)
  crop/resize        RandomResizedCrop(224) + RandomHorizontalFlip
  normalise/convert  ToTensor + Normalize
  batch copy         default_collate's torch.stack into the batch

Usage: /usr/bin/python3 bench/peer_profile.py ROOT [--epochs 1]
       [--batch 64] [--resolution 224]
Prints one JSON line (the shape of `faster bench load --json`'s profile).
"""
import argparse
import io
import json
import random
import time

import torch
from PIL import Image
from torchvision import datasets, transforms as T


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("root")
    ap.add_argument("--epochs", type=int, default=1)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--resolution", type=int, default=224)
    a = ap.parse_args()
    torch.set_num_threads(1)
    torch.manual_seed(0)
    random.seed(0)
    crop = T.Compose([T.RandomResizedCrop(a.resolution), T.RandomHorizontalFlip()])
    conv = T.Compose([T.ToTensor(), T.Normalize(mean=[0.485, 0.456, 0.406], std=[0.229, 0.224, 0.225])])
    paths = [p for p, _ in datasets.ImageFolder(a.root).samples]
    clock = time.thread_time
    t = {"read": 0.0, "decode": 0.0, "crop/resize": 0.0, "normalise/convert": 0.0, "batch copy": 0.0}
    n = 0
    for _ in range(a.epochs):
        order = list(range(len(paths)))
        random.shuffle(order)
        batch = []
        for i in order:
            c0 = clock()
            with open(paths[i], "rb") as f:
                data = f.read()
            c1 = clock()
            img = Image.open(io.BytesIO(data)).convert("RGB")
            c2 = clock()
            img = crop(img)
            c3 = clock()
            x = conv(img)
            c4 = clock()
            t["read"] += c1 - c0
            t["decode"] += c2 - c1
            t["crop/resize"] += c3 - c2
            t["normalise/convert"] += c4 - c3
            batch.append(x)
            n += 1
            if len(batch) == a.batch:
                c5 = clock()
                torch.stack(batch)
                t["batch copy"] += clock() - c5
                batch = []
    per = {k: 1e6 * v / max(n, 1) for k, v in t.items()}
    total = sum(per.values())
    print(json.dumps({"peer": "torchvision+PIL", "torchvision": __import__("torchvision").__version__,
                      "pillow": Image.__version__, "samples": n, "clock": "thread CPU time",
                      "phases": [{"name": k, "us_per_sample": v, "share": v / total} for k, v in per.items()],
                      "us_per_sample": total, "images_per_sec_per_core": 1e6 / total}))


if __name__ == "__main__":
    main()
