#!/usr/bin/python3
"""torchvision's side of augment's recipe tests (recipe_tv_test.go).

python3 recipe_oracle.py DIR: DIR/cases.json lists cases {"in", "w", "h",
"ops": [[name, args], ...]}; "in" names a raw uint8 RGB HWC file. Each case
runs torchvision.transforms.functional's ops on the PIL image (the path of
a reference Compose before ToTensor) and writes DIR/out_K.bin, uint8 HWC
(one channel for a gray result). Exits 3 without torchvision.
"""
import json
import os
import sys

try:
    import numpy as np
    from PIL import Image
    import torchvision.transforms.functional as F
    from torchvision.transforms import InterpolationMode
except ImportError as e:  # pragma: no cover
    print("no torchvision: %s" % e, file=sys.stderr)
    sys.exit(3)

MODES = {"nearest": InterpolationMode.NEAREST, "bilinear": InterpolationMode.BILINEAR,
         "bicubic": InterpolationMode.BICUBIC}


def apply(img, name, a):
    if name == "pad":
        fill = a["fill"]
        return F.pad(img, a["padding"], tuple(fill) if isinstance(fill, list) else fill, a["mode"])
    if name == "crop":
        return F.crop(img, a["top"], a["left"], a["h"], a["w"])
    if name == "center_crop":
        return F.center_crop(img, a["size"])
    if name == "resize":
        return F.resize(img, a["size"], MODES[a["interp"]], max_size=a.get("max_size"))
    if name == "vflip":
        return F.vflip(img)
    if name == "grayscale":
        return F.rgb_to_grayscale(img, a["n"])
    if name == "grayscale_tensor":  # the tensor path (after PILToTensor), as RandomGrayscale
        t = F.rgb_to_grayscale(F.pil_to_tensor(img), a["n"])
        return Image.fromarray(t.permute(1, 2, 0).squeeze(-1).numpy())
    raise ValueError(name)


def main():
    d = sys.argv[1]
    with open(os.path.join(d, "cases.json")) as f:
        cases = json.load(f)
    for k, c in enumerate(cases):
        a = np.fromfile(os.path.join(d, c["in"]), dtype=np.uint8).reshape(c["h"], c["w"], 3)
        img = Image.fromarray(a, "RGB")
        for name, args in c["ops"] or []:
            img = apply(img, name, args)
        np.asarray(img, dtype=np.uint8).tofile(os.path.join(d, "out_%d.bin" % k))


if __name__ == "__main__":
    main()
