#!/usr/bin/python3
"""Images/s delivered into a torch training loop's hands, by faster.Loader
(`faster serve` through shared memory) or by torchvision's ImageFolder +
DataLoader (the peer, as bench/peer_dataloader.py builds it), with the same
loop: it does nothing but touch each batch's tensor (reads one element of
its last row, so the data is really there). Same transform (train:
random-resized-crop, flip, normalise to float32 NCHW), batch and workers.
Timed from the first request for a batch to the end of the last epoch (the
loaders' start-up is outside: both build their file lists before).

Usage: PYTHONPATH=python FASTER_BIN=bin/faster /usr/bin/python3 bench/serve_loop.py \
           --loader faster|torchvision ROOT [--workers N] [--batch B] [--epochs E] [--layout u8-hwc]
With --layout u8-hwc faster hands uint8 NHWC rows over (normalisation is
the accelerator's work, docs/serve.md); the loop touches them the same way.
Prints one JSON line; cpu_seconds_per_1000_images is the CPU time of this
process and of the loader's processes (DataLoader's workers, faster's
server: all reaped before it is read), from before the loader is made to
after it is shut down, per 1,000 images: what the loading cost, start-up
included, which other users of a shared machine do not change.
"""
import argparse
import gc
import json
import resource
import time

import torch


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("root")
    ap.add_argument("--loader", choices=("faster", "torchvision"), required=True)
    ap.add_argument("--workers", type=int, default=1)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--epochs", type=int, default=2)
    ap.add_argument("--resolution", type=int, default=224)
    ap.add_argument("--layout", default="f32-chw", choices=("f32-chw", "u8-hwc"),
                    help="faster only: u8-hwc hands uint8 NHWC over, to normalise on the accelerator")
    ap.add_argument("--recipe", default="plain", choices=("plain", "ta-wide-erasing"),
                    help="ta-wide-erasing: torchvision's reference v2 train preset (TrivialAugmentWide(BILINEAR) "
                         "after the flip, RandomErasing(0.1) after Normalize), the same Compose handed to both")
    a = ap.parse_args()
    torch.set_num_threads(1)
    c0 = cpu()
    from torchvision import transforms as T
    norm = T.Normalize(mean=[0.485, 0.456, 0.406], std=[0.229, 0.224, 0.225])
    tf = T.Compose([T.RandomResizedCrop(a.resolution), T.RandomHorizontalFlip(), T.ToTensor(), norm])
    if a.recipe == "ta-wide-erasing":
        B = T.InterpolationMode.BILINEAR
        tf = T.Compose([T.RandomResizedCrop(a.resolution, interpolation=B), T.RandomHorizontalFlip(0.5),
                        T.TrivialAugmentWide(interpolation=B), T.PILToTensor(), T.ConvertImageDtype(torch.float),
                        norm, T.RandomErasing(p=0.1)])
    if a.loader == "faster":
        import faster
        dl = faster.Loader(a.root, batch_size=a.batch, transform="train" if a.recipe == "plain" else tf,
                           resolution=a.resolution, workers=a.workers, layout=a.layout, output="torch")
        name = "faster.Loader (faster serve, shared memory)"
    else:
        from torch.utils.data import DataLoader
        from torchvision import datasets
        dl = DataLoader(datasets.ImageFolder(a.root, transform=tf), batch_size=a.batch, shuffle=True,
                        num_workers=a.workers, persistent_workers=a.workers > 0)
        name = "torchvision ImageFolder + DataLoader"
    n, touched, t0 = 0, 0.0, time.perf_counter()
    for epoch in range(a.epochs):
        if hasattr(dl, "set_epoch"):
            dl.set_epoch(epoch)
        for images, labels in dl:
            touched += float(images[-1, 0, 0, 0]) + int(labels[-1])  # touch the tensor
            n += images.shape[0]
    el = time.perf_counter() - t0
    if hasattr(dl, "close"):
        dl.close()  # the server exits and is reaped
    del dl  # DataLoader's persistent workers are shut down and reaped
    gc.collect()
    c = cpu() - c0
    print(json.dumps({"loader": name, "recipe": a.recipe, "workers": a.workers, "batch": a.batch, "images": n,
                      "seconds": el, "images_per_sec": n / el, "cpu_seconds": c,
                      "cpu_seconds_per_1000_images": c / n * 1000}))


def cpu():
    """CPU time (user + system) of this process and its reaped children."""
    s, c = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return s.ru_utime + s.ru_stime + c.ru_utime + c.ru_stime


if __name__ == "__main__":
    main()
