#!/usr/bin/python3
"""Writes an ImageNet-shaped ImageFolder tree made of real photographs.

    imagenet_like.py OUT --classes N --per-class K [--seed S] [--odd] [--src DIR] [--quality Q] [--noise SIGMA]

Every image is a random crop of a real photograph from Debian's wallpaper
packages (mate-backgrounds by default), resized to ImageNet's size
distribution (mostly 500x375 and 375x500, the rest with the shorter edge in
[200, 500] and an aspect ratio in [3/4, 2]; mean about 469x387) and saved as a
baseline JPEG at quality 90 (4:2:0): the train split of ILSVRC-2012 in
pixel shape, not in content. Bytes fall short: these wallpapers are
smoother than ImageNet's photographs, so a 500x375 crop is about 40 kB at
quality 90 where ImageNet's mean is about 110 kB (--quality 98 gives about
80 kB); what a decoder spends per pixel is ImageNet's, what storage reads
per image is about a third. Class c takes its crops from
source photograph c mod (number of photographs), so classes differ in what
they show.

--odd adds the files a real crawl has, one of each kind, in the first
classes (ImageNet has all of them): a CMYK JPEG, a greyscale JPEG, PNG bytes
under a .JPEG name, a JPEG with an EXIF orientation tag (6: rotate 90), and a
truncated JPEG (its last half cut off). Their names are printed on stdout as
"odd KIND PATH" lines, so a test can tell which ones a loader must reject.

The output is deterministic for a seed: the same tree on every machine with
the same Pillow. Writes are atomic (temp + rename); a rerun keeps files
already written.
"""
import argparse
import glob
import io
import os
import random
import sys

from PIL import Image

SOURCES = ["/usr/share/backgrounds/mate"]


def photos(src):
    files = []
    for d in src:
        for ext in ("jpg", "jpeg", "JPG"):
            files += glob.glob(os.path.join(d, "**", "*." + ext), recursive=True)
    files = sorted(set(files))
    if not files:
        sys.exit(f"imagenet_like.py: no JPEG under {src}: run scripts/setup.sh (mate-backgrounds)")
    return files


def size(r):
    """One (width, height) from ImageNet's distribution."""
    u = r.random()
    if u < 0.62:
        return 500, 375
    if u < 0.78:
        return 375, 500
    short = r.randint(200, 500)
    aspect = r.uniform(0.75, 2.0)
    long = min(round(short * aspect), 1000)
    return (long, short) if r.random() < 0.7 else (short, long)


def crop(im, w, h, r):
    """A random crop of im with aspect w:h, at least half of im's shorter
    edge, resized to w x h."""
    W, H = im.size
    scale = r.uniform(0.5, 1.0)
    cw = min(W, round(min(W, H * w / h) * scale))
    ch = min(H, round(cw * h / w))
    cw = round(ch * w / h)
    x, y = r.randint(0, W - cw), r.randint(0, H - ch)
    return im.crop((x, y, x + cw, y + ch)).resize((w, h), Image.BILINEAR)


def save(path, data):
    if os.path.exists(path):
        return
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(data)
    os.replace(tmp, path)


QUALITY = 90


def noisy(im, sigma, seed):
    import numpy as np
    px = np.asarray(im, dtype=np.float32)
    px = px + np.random.default_rng(seed).normal(0, sigma, px.shape).astype(np.float32)
    return Image.fromarray(np.clip(np.rint(px), 0, 255).astype(np.uint8), "RGB")


def jpeg(im, **kw):
    b = io.BytesIO()
    im.save(b, "JPEG", quality=QUALITY, **kw)
    return b.getvalue()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--classes", type=int, default=100)
    ap.add_argument("--per-class", type=int, default=10)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--odd", action="store_true")
    ap.add_argument("--src", action="append")
    ap.add_argument("--quality", type=int, default=90)
    ap.add_argument("--noise", type=float, default=0,
                    help="sensor-like Gaussian noise of this sigma (8-bit levels) on every pixel, seeded "
                    "per image: the wallpapers' bytes per pixel rise towards ImageNet's (8 gives about 78 kB "
                    "at quality 92 for 500x375, ImageNet's mean being ~110 kB at its own qualities)")
    a = ap.parse_args()
    global QUALITY
    QUALITY = a.quality
    src = photos(a.src or SOURCES)
    cache = {}

    def photo(i):
        f = src[i % len(src)]
        if f not in cache:
            im = Image.open(f)
            im.draft("RGB", (1400, 1400))  # DCT-scaled decode: fast, and plenty of detail
            im = im.convert("RGB")
            im.thumbnail((1400, 1400), Image.BILINEAR)
            cache[f] = im  # every source kept: a few dozen MB
        return cache[f]

    r = random.Random(a.seed)
    for c in range(a.classes):
        d = os.path.join(a.out, "n%08d" % c)
        os.makedirs(d, exist_ok=True)
        for k in range(a.per_class):
            w, h = size(r)
            im = crop(photo(c), w, h, r)
            if a.noise > 0:
                im = noisy(im, a.noise, r.getrandbits(64))
            save(os.path.join(d, "n%08d_%d.JPEG" % (c, k)), jpeg(im))
    if not a.odd:
        return
    r = random.Random(a.seed + 1)
    base = crop(photo(0), 500, 375, r)
    odd = {
        "cmyk": jpeg(base.convert("CMYK")),
        "grey": jpeg(base.convert("L")),
        "png": (lambda b: (base.save(b, "PNG"), b.getvalue())[1])(io.BytesIO()),
    }
    ex = Image.Exif()
    ex[0x0112] = 6
    odd["exif"] = jpeg(base, exif=ex.tobytes())
    full = jpeg(base)
    odd["truncated"] = full[: len(full) // 2]
    for i, (kind, data) in enumerate(odd.items()):
        d = os.path.join(a.out, "n%08d" % (i % a.classes))
        p = os.path.join(d, "odd_%s.JPEG" % kind)
        save(p, data)
        print("odd", kind, p)


if __name__ == "__main__":
    main()
