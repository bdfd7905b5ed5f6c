#!/usr/bin/python3
"""torchvision's warps on PIL images, for warp_pil_test.go.

Run by the Go test with Debian's /usr/bin/python3 (python3-torchvision 0.14,
python3-pil 9.4): python3 pil_warp_oracle.py DIR. DIR holds cases.json, a
list of cases {"op", "in", "w", "h", "c", "path", "params"}; "in" names a
raw uint8 HWC file (c 3: an RGB picture, c 1: an L picture). For each case
k this writes DIR/out_k.bin, uint8 HWC: torchvision.transforms.functional's
rotate or affine, the policies' _apply_op, ColorJitter's adjust_* or
RandomGrayscale's rgb_to_grayscale, with the forced parameters on
a PIL image ("path": "pil", what a Compose runs before ToTensor or
PILToTensor) or on a uint8 tensor ("path": "tensor", after PILToTensor).
Exits 3 when torch, torchvision or PIL cannot be imported, so that the test
can skip.
"""
import json
import os
import sys

try:
    import numpy as np
    import torch
    import torchvision.transforms.functional as F
    from PIL import Image
    from torchvision.transforms import InterpolationMode
    from torchvision.transforms.autoaugment import _apply_op
except ImportError as e:  # pragma: no cover
    print("no torchvision: %s" % e, file=sys.stderr)
    sys.exit(3)

torch.set_num_threads(1)
MODES = {"nearest": InterpolationMode.NEAREST, "bilinear": InterpolationMode.BILINEAR,
         "bicubic": InterpolationMode.BICUBIC}


def apply(op, img, p):
    interp = MODES[p["interp"]]
    if op == "rotate":  # RandomRotation's call
        return F.rotate(img, p["angle"], interp, center=p.get("center"), fill=p.get("fill"))
    if op == "affine":  # RandomAffine's call
        return F.affine(img, angle=p["angle"], translate=p["translate"], scale=p["scale"], shear=p["shear"],
                        interpolation=interp, center=p.get("center"), fill=p.get("fill"))
    if op == "augop":  # one op of the policies, as they call it
        return _apply_op(img, p["name"], p["magnitude"], interp, p.get("fill"))
    if op == "adjust":  # one of ColorJitter's adjustments, as it calls them
        return getattr(F, "adjust_" + p["name"])(img, p["factor"])
    if op == "gray":  # RandomGrayscale's call on an RGB picture
        return F.rgb_to_grayscale(img, num_output_channels=3)
    raise ValueError(op)


def main():
    d = sys.argv[1]
    with open(os.path.join(d, "cases.json")) as f:
        cases = json.load(f)
    for k, c in enumerate(cases):
        w, h, ch = c["w"], c["h"], c["c"]
        a = np.fromfile(os.path.join(d, c["in"]), dtype=np.uint8).reshape(h, w, ch)
        if c["path"] == "pil":
            img = Image.fromarray(a[:, :, 0] if ch == 1 else a, "L" if ch == 1 else "RGB")
            out = np.asarray(apply(c["op"], img, c["params"]))
        else:
            img = torch.from_numpy(a.copy()).permute(2, 0, 1).contiguous()
            p = dict(c["params"])
            if c["op"] == "augop" and isinstance(p.get("fill"), list):
                p["fill"] = [float(x) for x in p["fill"]]  # the policies' forward on tensors
            out = apply(c["op"], img, p)
            assert out.dtype == torch.uint8, (c["op"], out.dtype)
            out = out.permute(1, 2, 0).contiguous().numpy()
        np.ascontiguousarray(out, dtype=np.uint8).reshape(h, w, ch).tofile(os.path.join(d, "out_%d.bin" % k))


if __name__ == "__main__":
    main()
