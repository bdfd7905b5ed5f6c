#!/usr/bin/python3
"""Peer of `faster bench load`: torchvision's ImageFolder + DataLoader with
the study's transform, batch size and worker count, timed the same way
(images delivered into the training loop's hands per second).

  train: RandomResizedCrop(224), RandomHorizontalFlip, ToTensor, Normalize
  eval:  Resize(256), CenterCrop(224), ToTensor, Normalize

Usage: /usr/bin/python3 bench/peer_dataloader.py ROOT [--workers N]
       [--batch B] [--epochs E] [--transform train|eval]
Prints one JSON line.
"""
import argparse
import json
import time

import torch
from torch.utils.data import DataLoader
from torchvision import datasets, transforms as T


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("root")
    ap.add_argument("--workers", type=int, default=1)
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--epochs", type=int, default=1)
    ap.add_argument("--transform", default="train")
    ap.add_argument("--resolution", type=int, default=224)
    a = ap.parse_args()
    torch.set_num_threads(1)
    norm = T.Normalize(mean=[0.485, 0.456, 0.406], std=[0.229, 0.224, 0.225])
    r = a.resolution
    if a.transform == "train":
        tf = T.Compose([T.RandomResizedCrop(r), T.RandomHorizontalFlip(), T.ToTensor(), norm])
    else:
        tf = T.Compose([T.Resize(r * 256 // 224), T.CenterCrop(r), T.ToTensor(), norm])
    ds = datasets.ImageFolder(a.root, transform=tf)
    dl = DataLoader(ds, batch_size=a.batch, shuffle=(a.transform == "train"),
                    num_workers=a.workers, pin_memory=False, drop_last=False,
                    persistent_workers=a.workers > 0)
    n, t0 = 0, time.perf_counter()
    for _ in range(a.epochs):
        for images, labels in dl:
            n += images.shape[0]
    el = time.perf_counter() - t0
    print(json.dumps({"peer": "torchvision ImageFolder + DataLoader", "workers": a.workers,
                      "batch": a.batch, "transform": a.transform, "images": n,
                      "seconds": el, "images_per_sec": n / el}))


if __name__ == "__main__":
    main()
