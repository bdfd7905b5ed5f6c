#!/usr/bin/python3
"""torchvision's side of augment's equality tests (torchvision_test.go).

Run by the Go test with Debian's /usr/bin/python3 (python3-torchvision,
0.14): python3 tv_oracle.py DIR. DIR holds cases.json, written by the test:
a list of cases {"op", "in", "w", "h", "c", "dtype", "params"}; "in" names a
raw file of the input (uint8 HWC, or float32 CHW for "erase"). For each case
k this writes DIR/out_k.bin: torchvision.transforms.functional applied on
the tensor path (a uint8 tensor CHW, as PILToTensor gives) with the forced
parameters, written back in the input's layout. Exits 3 when torch or
torchvision cannot be imported, so that the test can skip.
"""
import json
import os
import sys

try:
    import numpy as np
    import torch
    import torchvision
    import torchvision.transforms.functional as F
    from torchvision.transforms import InterpolationMode
except ImportError as e:  # pragma: no cover
    print("no torchvision: %s" % e, file=sys.stderr)
    sys.exit(3)

torch.set_num_threads(1)
MODES = {"nearest": InterpolationMode.NEAREST, "bilinear": InterpolationMode.BILINEAR}


def jitter(img, p):
    for k in p["order"]:
        if k == 0 and "b" in p:
            img = F.adjust_brightness(img, p["b"])
        elif k == 1 and "c" in p:
            img = F.adjust_contrast(img, p["c"])
        elif k == 2 and "s" in p:
            img = F.adjust_saturation(img, p["s"])
        elif k == 3 and "h" in p:
            img = F.adjust_hue(img, p["h"])
    return img


def apply(op, img, p):
    if op == "brightness":
        return F.adjust_brightness(img, p["f"])
    if op == "contrast":
        return F.adjust_contrast(img, p["f"])
    if op == "saturation":
        return F.adjust_saturation(img, p["f"])
    if op == "hue":
        return F.adjust_hue(img, p["f"])
    if op == "jitter":
        return jitter(img, p)
    if op == "grayscale":
        return F.rgb_to_grayscale(img, num_output_channels=img.shape[0])
    if op == "blur":
        return F.gaussian_blur(img, [p["kw"], p["kh"]], [p["sx"], p["sy"]])
    if op == "rotate":
        return F.rotate(img, p["angle"], MODES[p["interp"]], center=p.get("center"), fill=p.get("fill"))
    if op == "affine":
        return F.affine(img, angle=p["angle"], translate=p["translate"], scale=p["scale"],
                        shear=p["shear"], interpolation=MODES[p["interp"]], center=p.get("center"),
                        fill=p.get("fill"))
    if op == "erase":
        v = torch.tensor(p["values"], dtype=torch.float32)
        if v.numel() == img.shape[0] * p["h"] * p["w"] and v.numel() > 1:
            v = v.reshape(img.shape[0], p["h"], p["w"])
        else:
            v = v[:, None, None]
        return F.erase(img, p["i"], p["j"], p["h"], p["w"], v)
    if op == "sharpness":
        return F.adjust_sharpness(img, p["f"])
    if op == "posterize":
        return F.posterize(img, p["bits"])
    if op == "solarize":
        return F.solarize(img, p["threshold"])
    if op == "autocontrast":
        return F.autocontrast(img)
    if op == "equalize":
        return F.equalize(img)
    if op == "invert":
        return F.invert(img)
    if op == "augop":  # one op of the auto-augment policies, as they call it
        from torchvision.transforms.autoaugment import _apply_op
        return _apply_op(img, p["name"], p["magnitude"], MODES[p["interp"]], p.get("fill"))
    if op == "augmix":  # AugMix's forward with forced weights and chains
        from torchvision.transforms.autoaugment import _apply_op
        batch = img.view(1, *img.shape)
        mix = torch.tensor([p["m0"]], dtype=torch.float32).view(1, 1, 1, 1) * batch
        for wt, chain in zip(p["weights"], p["chains"]):
            aug = batch
            for name, mag in chain:
                aug = _apply_op(aug, name, mag, MODES[p["interp"]], p.get("fill"))
            mix.add_(torch.tensor([wt], dtype=torch.float32).view(1, 1, 1, 1) * aug)
        return mix.view(img.shape).to(dtype=img.dtype)
    raise ValueError(op)


def tables():
    """The magnitude tables of the policies, as float32 values."""
    from torchvision.transforms import autoaugment as A
    out = {}
    ta = A.TrivialAugmentWide()._augmentation_space(31)
    out["ta"] = {k: [float(x) for x in v.reshape(-1).tolist()] for k, (v, _) in ta.items()}
    ra = A.RandAugment()._augmentation_space(31, (224, 168))
    out["ra"] = {k: [float(x) for x in v.reshape(-1).tolist()] for k, (v, _) in ra.items()}
    aa = A.AutoAugment()._augmentation_space(10, (224, 168))
    out["aa"] = {k: [float(x) for x in v.reshape(-1).tolist()] for k, (v, _) in aa.items()}
    am = A.AugMix()._augmentation_space(10, (224, 168))
    out["am"] = {k: [float(x) for x in v.reshape(-1).tolist()] for k, (v, _) in am.items()}
    return out


def main():
    d = sys.argv[1]
    with open(os.path.join(d, "cases.json")) as f:
        cases = json.load(f)
    for k, c in enumerate(cases):
        w, h, ch = c["w"], c["h"], c["c"]
        if c.get("dtype") == "float32":
            img = torch.from_numpy(np.fromfile(os.path.join(d, c["in"]), dtype=np.float32).reshape(ch, h, w).copy())
            out = apply(c["op"], img, c["params"]).numpy()
        else:
            a = np.fromfile(os.path.join(d, c["in"]), dtype=np.uint8).reshape(h, w, ch)
            img = torch.from_numpy(a.copy()).permute(2, 0, 1).contiguous()
            out = apply(c["op"], img, c["params"])
            assert out.dtype == torch.uint8, (c["op"], out.dtype)
            out = out.permute(1, 2, 0).contiguous().numpy()
        out.tofile(os.path.join(d, "out_%d.bin" % k))
    with open(os.path.join(d, "tables.json"), "w") as f:
        json.dump(tables(), f)


if __name__ == "__main__":
    main()
