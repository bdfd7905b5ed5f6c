#!/usr/bin/python3
"""Regenerates the golden resize outputs in this folder.

Run from anywhere with Debian's python3-opencv and python3-pil
(scripts/setup.sh installs them): /usr/bin/python3 augment/testdata/gen.py

Sources (committed PNGs):
  photo.png       160x120 RGB, a downscaled crop of a real photograph
                  (Debian mate-backgrounds, nature/LadyBird.jpg)
  photo_gray.png  the same in grayscale (PIL 'L')
  synth.png       97x61 RGB, deterministic high-frequency pattern + noise
Outputs: golden/<case>.png and cases.json, which resize_test.go reads.
OpenCV is cv2.resize(..., interpolation=cv2.INTER_AREA); PIL is
Image.resize((w, h), Image.BILINEAR, box=...), Pillow's antialiased triangle;
"bicubic" and "nearest" are Image.BICUBIC and Image.NEAREST the same way. A
case with a view resizes to the full size (fw, fh) and crops the view out
of the result (torchvision's Resize then CenterCrop).
"""
import json
import os

import cv2
import numpy as np
from PIL import Image

HERE = os.path.dirname(os.path.abspath(__file__))
PHOTO = "/usr/share/backgrounds/mate/nature/LadyBird.jpg"


def make_sources():
    if not os.path.exists(os.path.join(HERE, "photo.png")):
        im = Image.open(PHOTO).convert("RGB")
        w, h = im.size
        im = im.crop((w // 4, h // 4, w // 4 + 800, h // 4 + 600)).resize((160, 120), Image.LANCZOS)
        im.save(os.path.join(HERE, "photo.png"), optimize=True)
        im.convert("L").save(os.path.join(HERE, "photo_gray.png"), optimize=True)
    if not os.path.exists(os.path.join(HERE, "synth.png")):
        rng = np.random.default_rng(7)
        y, x = np.mgrid[0:61, 0:97]
        a = np.stack([(x * 37 + y * 11) % 256, ((x ^ y) * 9) % 256, (128 + 127 * np.sin(x * 0.7) * np.cos(y * 0.45))], -1)
        a = np.clip(a + rng.integers(-20, 21, a.shape), 0, 255).astype(np.uint8)
        Image.fromarray(a, "RGB").save(os.path.join(HERE, "synth.png"), optimize=True)


# (name, source, filter, out_w, out_h, box or None)
CASES = [
    ("area_synth_32x20", "synth.png", "area", 32, 20, None),
    ("area_synth_13x9", "synth.png", "area", 13, 9, None),
    ("area_photo_80x60", "photo.png", "area", 80, 60, None),
    ("area_photo_40x30", "photo.png", "area", 40, 30, None),
    ("area_photo_37x29", "photo.png", "area", 37, 29, None),
    ("area_photo_111x77", "photo.png", "area", 111, 77, None),
    ("area_photo_1x1", "photo.png", "area", 1, 1, None),
    ("area_photo_up_224x200", "photo.png", "area", 224, 200, None),
    ("area_photo_mixed_200x50", "photo.png", "area", 200, 50, None),
    ("area_gray_41x33", "photo_gray.png", "area", 41, 33, None),
    ("tri_synth_32x20", "synth.png", "triangle", 32, 20, None),
    ("tri_photo_80x60", "photo.png", "triangle", 80, 60, None),
    ("tri_photo_37x29", "photo.png", "triangle", 37, 29, None),
    ("tri_photo_1x1", "photo.png", "triangle", 1, 1, None),
    ("tri_photo_up_224x200", "photo.png", "triangle", 224, 200, None),
    ("tri_photo_box_50x50", "photo.png", "triangle", 50, 50, (10.5, 7.25, 131.75, 101.0)),
    ("tri_photo_box_up_64x48", "photo.png", "triangle", 64, 48, (3.0, 4.5, 40.0, 33.5)),
    ("tri_gray_41x33", "photo_gray.png", "triangle", 41, 33, None),
    ("cubic_synth_32x20", "synth.png", "bicubic", 32, 20, None),
    ("cubic_photo_80x60", "photo.png", "bicubic", 80, 60, None),
    ("cubic_photo_37x29", "photo.png", "bicubic", 37, 29, None),
    ("cubic_photo_1x1", "photo.png", "bicubic", 1, 1, None),
    ("cubic_photo_up_224x200", "photo.png", "bicubic", 224, 200, None),
    ("cubic_photo_box_50x50", "photo.png", "bicubic", 50, 50, (10.5, 7.25, 131.75, 101.0)),
    ("cubic_photo_box_up_64x48", "photo.png", "bicubic", 64, 48, (3.0, 4.5, 40.0, 33.5)),
    ("cubic_gray_41x33", "photo_gray.png", "bicubic", 41, 33, None),
    ("near_synth_13x9", "synth.png", "nearest", 13, 9, None),
    ("near_photo_37x29", "photo.png", "nearest", 37, 29, None),
    ("near_photo_1x1", "photo.png", "nearest", 1, 1, None),
    ("near_photo_up_224x200", "photo.png", "nearest", 224, 200, None),
    ("near_photo_box_50x50", "photo.png", "nearest", 50, 50, (10.5, 7.25, 131.75, 101.0)),
    ("near_photo_box_up_64x48", "photo.png", "nearest", 64, 48, (3.0, 4.5, 40.0, 33.5)),
    ("near_gray_41x33", "photo_gray.png", "nearest", 41, 33, None),
]

# Resize to (fw, fh), then crop view (x0, y0, x1, y1): Resize(short) +
# CenterCrop as one pass (ResizeView).
# (name, source, filter, fw, fh, view)
VIEWS = [
    ("view_tri_photo_133x100_c87", "photo.png", "triangle", 133, 100, (23, 6, 110, 93)),
    ("view_cubic_photo_133x100_c87", "photo.png", "bicubic", 133, 100, (23, 6, 110, 93)),
    ("view_near_photo_133x100_c87", "photo.png", "nearest", 133, 100, (23, 6, 110, 93)),
    ("view_near_synth_91x57_c50", "synth.png", "nearest", 91, 57, (20, 3, 70, 53)),
    ("view_cubic_gray_61x46_c40", "photo_gray.png", "bicubic", 61, 46, (10, 3, 50, 43)),
]

PIL_FILTERS = {"triangle": Image.BILINEAR, "bicubic": Image.BICUBIC, "nearest": Image.NEAREST}


def main():
    make_sources()
    os.makedirs(os.path.join(HERE, "golden"), exist_ok=True)
    out = []
    for name, src, filt, w, h, box in CASES:
        im = Image.open(os.path.join(HERE, src))
        if filt == "area":
            a = np.asarray(im)
            r = cv2.resize(a, (w, h), interpolation=cv2.INTER_AREA)
            res = Image.fromarray(r, im.mode)
        else:
            res = im.resize((w, h), PIL_FILTERS[filt], box=box)
        res.save(os.path.join(HERE, "golden", name + ".png"), optimize=True)
        out.append({"name": name, "src": src, "filter": filt, "w": w, "h": h, "box": list(box) if box else None})
    for name, src, filt, fw, fh, view in VIEWS:
        im = Image.open(os.path.join(HERE, src))
        res = im.resize((fw, fh), PIL_FILTERS[filt]).crop(view)
        res.save(os.path.join(HERE, "golden", name + ".png"), optimize=True)
        out.append({"name": name, "src": src, "filter": filt, "w": view[2] - view[0], "h": view[3] - view[1],
                    "box": None, "full": [fw, fh], "view": list(view)})
    with open(os.path.join(HERE, "cases.json"), "w") as f:
        json.dump(out, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
