#!/usr/bin/python3
"""The first epoch, and a loader made per epoch (issue 29 item 3).

Times E epochs of the train recipe (random-resized-crop 224, flip,
normalise to float32 NCHW, batch 64, one worker) in two patterns:
  long:      one loader, iterated E times (each iteration the next epoch)
  perepoch:  a new loader made for every epoch (an old pattern some
             scripts keep), closed after it
for faster.Loader and for torchvision's ImageFolder + DataLoader (whose
workers start anew each epoch unless persistent_workers=True; the peer is
measured as such a script writes it: persistent_workers=False in
'perepoch', True in 'long').

Prints one JSON line: the seconds of each epoch (the loader's construction
counted in the epoch it serves), the seconds to each epoch's first batch,
and the CPU seconds of this process and its reaped children per 1,000
images (start-up included; torch's import is not).

Usage: PYTHONPATH=python FASTER_BIN=bin/faster /usr/bin/python3 bench/first_epoch.py \\
           ROOT --loader faster|torchvision --pattern long|perepoch [--epochs E]
"""
import argparse
import gc
import json
import resource
import time

import torch


def cpu():
    s, c = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return s.ru_utime + s.ru_stime + c.ru_utime + c.ru_stime


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("root")
    ap.add_argument("--loader", choices=("faster", "torchvision"), required=True)
    ap.add_argument("--pattern", choices=("long", "perepoch"), required=True)
    ap.add_argument("--epochs", type=int, default=4)
    ap.add_argument("--batch", type=int, default=64)
    a = ap.parse_args()
    torch.set_num_threads(1)
    from torchvision import datasets, transforms as T
    tf = T.Compose([T.RandomResizedCrop(224), T.RandomHorizontalFlip(), T.ToTensor(),
                    T.Normalize(mean=[0.485, 0.456, 0.406], std=[0.229, 0.224, 0.225])])
    if a.loader == "faster":
        import faster

    def make():
        if a.loader == "faster":
            return faster.Loader(a.root, batch_size=a.batch, transform="train", num_workers=1, shuffle=True)
        from torch.utils.data import DataLoader
        return DataLoader(datasets.ImageFolder(a.root, transform=tf), batch_size=a.batch, shuffle=True,
                          num_workers=1, persistent_workers=a.pattern == "long")

    c0 = cpu()
    epochs, firsts, n = [], [], 0
    t_start = time.perf_counter()
    dl = make() if a.pattern == "long" else None
    for e in range(a.epochs):
        t0 = t_start if e == 0 else time.perf_counter()  # epoch 0 counts the construction
        if a.pattern == "perepoch":
            dl = make()
            if hasattr(dl, "set_epoch"):
                dl.set_epoch(e)
        first = None
        for images, labels in dl:
            if first is None:
                first = time.perf_counter() - t0
            n += images.shape[0]
        epochs.append(round(time.perf_counter() - t0, 4))
        firsts.append(round(first, 4))
        if a.pattern == "perepoch":
            if hasattr(dl, "close"):
                dl.close()
            del dl  # as a script's loop drops it; no gc.collect() (tens of ms with torch loaded)
    if a.pattern == "long":
        if hasattr(dl, "close"):
            dl.close()
        del dl
        gc.collect()
    c = cpu() - c0
    print(json.dumps({"loader": a.loader, "pattern": a.pattern, "epochs": epochs, "first_batch": firsts,
                      "images": n, "cpu_seconds_per_1000_images": round(c / n * 1000, 3)}))


if __name__ == "__main__":
    main()
