#!/usr/bin/python3
"""Makes the benchmark photo set: real photographs from Debian's
mate-backgrounds package, downscaled to ImageNet's typical size (shorter
edge 375, JPEG quality 90, 4:2:0), written once into a folder that the peer
scripts and the Go benchmarks read (FASTER_PHOTOS, default
/tmp/faster-photos). Prints the folder.
"""
import glob
import os
import sys

from PIL import Image

SRC = "/usr/share/backgrounds/mate"


def photos_dir():
    out = os.environ.get("FASTER_PHOTOS", "/tmp/faster-photos")
    files = sorted(glob.glob(os.path.join(SRC, "**", "*.jpg"), recursive=True))
    if not files:
        sys.exit(f"photos.py: no JPEG under {SRC}: run scripts/setup.sh (mate-backgrounds)")
    os.makedirs(out, exist_ok=True)
    for f in files:
        dst = os.path.join(out, os.path.splitext(os.path.basename(f))[0] + ".JPEG")
        if os.path.exists(dst):
            continue
        im = Image.open(f).convert("RGB")
        w, h = im.size
        s = 375 / min(w, h)
        im = im.resize((round(w * s), round(h * s)), Image.LANCZOS)
        im.save(dst + ".tmp", "JPEG", quality=90)
        os.replace(dst + ".tmp", dst)
    return out


if __name__ == "__main__":
    print(photos_dir())
