#!/usr/bin/python3
"""Generates the golden files of package downscale with OpenCV (Debian's
python3-opencv), so that the Go tests need no Python:

- src_*.jpg: small crops of real photographs (Debian mate-backgrounds),
  JPEG quality 92, one landscape, one portrait, one grayscale;
- cv2_*.png: cv2.imread of each, cv2.resize(INTER_AREA) to the study's size
  for max size N=96 (int((long/short) * N)), written losslessly;
- geometry.json: the study's output size for every JPEG of mate-backgrounds
  at several N, with the image sizes cv2 reads.

Run from this folder: /usr/bin/python3 gen.py
"""
import glob
import json
import os

import cv2

N = 96
MATE = "/usr/share/backgrounds/mate"


def seed_size(h, w, n):
    if min(h, w) <= n:
        return None
    if h < w:
        return (int((w / h) * n), n)
    return (n, int((h / w) * n))


crops = [
    ("landscape", "nature/LadyBird.jpg", (600, 500, 353, 237), False),  # x, y, w, h
    ("portrait", "nature/YellowFlower.jpg", (900, 500, 211, 317), False),
    ("gray", "nature/Wood.jpg", (1000, 800, 301, 203), True),
]
for name, f, (x, y, w, h), gray in crops:
    im = cv2.imread(os.path.join(MATE, f))
    im = im[y:y + h, x:x + w]
    if gray:
        im = cv2.cvtColor(im, cv2.COLOR_BGR2GRAY)
    cv2.imwrite(f"src_{name}.jpg", im, [cv2.IMWRITE_JPEG_QUALITY, 92])
    src = cv2.imread(f"src_{name}.jpg", cv2.IMREAD_UNCHANGED)
    sh, sw = src.shape[:2]
    out = cv2.resize(src, seed_size(sh, sw, N), interpolation=cv2.INTER_AREA)
    cv2.imwrite(f"cv2_{name}.png", out)

geo = {}
for f in sorted(glob.glob(os.path.join(MATE, "**", "*.jpg"), recursive=True)):
    h, w = cv2.imread(f).shape[:2]
    geo[os.path.relpath(f, MATE)] = {
        "width": w, "height": h,
        "sizes": {str(n): seed_size(h, w, n) for n in (96, 224, 256, 333, 500, 1079)},
    }
with open("geometry.json", "w") as fp:
    json.dump(geo, fp, indent=1, sort_keys=True)
