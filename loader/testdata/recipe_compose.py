#!/usr/bin/python3
"""torchvision's side of the loader's recipe tests (recipe_tv_test.go).

python3 recipe_compose.py DIR: DIR/cases.json is {"files": [...], "recipes":
[[op specs], ...]}, recipes as faster takes them (augment.Recipe:
torchvision's class names and keyword arguments). For each recipe R this
builds the torchvision Compose of its ops, runs it on each file K opened
with PIL (as ImageFolder does) and writes DIR/out_R_K.bin, the float32
tensor (C×H×W). Exits 3 without torchvision.
"""
import json
import os
import sys

try:
    import torch
    from PIL import Image
    import torchvision.transforms as T
except ImportError as e:  # pragma: no cover
    print("no torchvision: %s" % e, file=sys.stderr)
    sys.exit(3)

MODES = {"nearest": T.InterpolationMode.NEAREST, "bilinear": T.InterpolationMode.BILINEAR,
         "bicubic": T.InterpolationMode.BICUBIC}


def build(spec):
    spec = dict(spec)
    name = spec.pop("op")
    if "interpolation" in spec:
        spec["interpolation"] = MODES[spec["interpolation"]]
    if "dtype" in spec:
        spec["dtype"] = torch.float32
    for k in ("size", "padding", "fill", "kernel_size"):
        if isinstance(spec.get(k), list):
            spec[k] = [int(x) for x in spec[k]] if k != "fill" else tuple(spec[k])
    return getattr(T, name)(**spec)


def main():
    d = sys.argv[1]
    with open(os.path.join(d, "cases.json")) as f:
        cases = json.load(f)
    for r, recipe in enumerate(cases["recipes"]):
        compose = T.Compose([build(s) for s in recipe])
        for k, path in enumerate(cases["files"]):
            with open(path, "rb") as f:
                img = Image.open(f).convert("RGB")
            out = compose(img)
            out.numpy().astype("float32").tofile(os.path.join(d, "out_%d_%d.bin" % (r, k)))


if __name__ == "__main__":
    main()
