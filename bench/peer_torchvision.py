#!/usr/bin/python3
"""Peer benchmark: torchvision + PIL's standard training transform on one
core, the rate `faster`'s decode + augment is compared with.

  RandomResizedCrop(224) -> RandomHorizontalFlip() -> ToTensor() ->
  Normalize(ImageNet mean, std), each sample decoded from JPEG bytes held
  in memory with PIL (Image.open(...).convert("RGB"), as ImageFolder's
  loader does).

Usage: /usr/bin/python3 bench/peer_torchvision.py [--seconds 10] [DIR]
DIR defaults to the photo set of bench/photos.py. Prints one JSON line.
"""
import argparse
import glob
import io
import json
import os
import sys
import time

import torch
from PIL import Image
from torchvision import transforms as T

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import photos  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=10)
    ap.add_argument("dir", nargs="?")
    a = ap.parse_args()
    torch.set_num_threads(1)
    d = a.dir or photos.photos_dir()
    blobs = [open(f, "rb").read() for f in sorted(glob.glob(os.path.join(d, "*.JPEG")))]
    tf = T.Compose([
        T.RandomResizedCrop(224),
        T.RandomHorizontalFlip(),
        T.ToTensor(),
        T.Normalize(mean=[0.485, 0.456, 0.406], std=[0.229, 0.224, 0.225]),
    ])
    torch.manual_seed(0)

    def one(i):
        img = Image.open(io.BytesIO(blobs[i % len(blobs)])).convert("RGB")
        return tf(img)

    for i in range(len(blobs)):  # warm up
        one(i)
    n, t0 = 0, time.perf_counter()
    while time.perf_counter() - t0 < a.seconds:
        one(n)
        n += 1
    el = time.perf_counter() - t0
    # The transform alone, on decoded pictures (no JPEG decode).
    imgs = [Image.open(io.BytesIO(b)).convert("RGB") for b in blobs]
    m, t1 = 0, time.perf_counter()
    while time.perf_counter() - t1 < a.seconds / 2:
        tf(imgs[m % len(imgs)])
        m += 1
    el2 = time.perf_counter() - t1
    print(json.dumps({"peer": "torchvision+PIL", "torchvision": __import__("torchvision").__version__,
                      "pillow": Image.__version__, "photos": len(blobs), "threads": 1,
                      "images_per_sec": round(n / el, 1),
                      "transform_only_images_per_sec": round(m / el2, 1)}))


if __name__ == "__main__":
    main()
