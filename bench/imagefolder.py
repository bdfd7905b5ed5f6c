#!/usr/bin/python3
"""Makes an ImageNet-like ImageFolder tree of real photographs for the
loading benchmarks: CLASSES class folders of PER_CLASS JPEGs (quality 90),
each a distinct random crop of one of Debian's mate-backgrounds photos,
resized so its shorter edge is 300-500 px (ImageNet's typical sizes), with
aspect ratios 3/4-16/9. Deterministic (seeded). Written once; prints the
root. Usage: bench/imagefolder.py [ROOT] [CLASSES] [PER_CLASS]
"""
import glob
import os
import random
import sys

from PIL import Image

SRC = "/usr/share/backgrounds/mate"


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else "/tmp/faster-imagefolder"
    classes = int(sys.argv[2]) if len(sys.argv) > 2 else 10
    per = int(sys.argv[3]) if len(sys.argv) > 3 else 50
    done = os.path.join(root, ".complete-%d-%d" % (classes, per))
    if os.path.exists(done):
        print(root)
        return
    files = sorted(glob.glob(os.path.join(SRC, "**", "*.jpg"), recursive=True))
    if not files:
        sys.exit(f"imagefolder.py: no JPEG under {SRC}: run scripts/setup.sh (mate-backgrounds)")
    rng = random.Random(12345)
    photos = []
    for f in files:
        im = Image.open(f).convert("RGB")
        im.thumbnail((1600, 1600), Image.BILINEAR)
        photos.append(im)
    for c in range(classes):
        d = os.path.join(root, "n%08d" % c)
        os.makedirs(d, exist_ok=True)
        for i in range(per):
            im = photos[rng.randrange(len(photos))]
            w, h = im.size
            aspect = rng.uniform(3 / 4, 16 / 9)
            cw = rng.randint(w // 3, w)
            ch = min(h, int(cw / aspect))
            x, y = rng.randint(0, w - cw), rng.randint(0, h - ch)
            crop = im.crop((x, y, x + cw, y + ch))
            short = rng.randint(300, 500)
            s = short / min(crop.size)
            crop = crop.resize((max(1, round(crop.size[0] * s)), max(1, round(crop.size[1] * s))), Image.BILINEAR)
            crop.save(os.path.join(d, "img_%05d.JPEG" % i), "JPEG", quality=90)
    open(done, "w").close()
    print(root)


if __name__ == "__main__":
    main()
