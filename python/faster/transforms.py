"""A torchvision transform, as a script already holds it, mapped onto the Go
pipeline's recipes:

    train = T.Compose([T.RandomResizedCrop(224), T.RandomHorizontalFlip(), T.ToTensor(),
                       T.Normalize(mean, std)])
    loader = faster.Loader(traindir, transform=train)

Supported, with their parameters (anything else is refused by name, before
any work, with what would work instead):

    train:  RandomResizedCrop(size, scale, ratio, interpolation)
            [RandomHorizontalFlip(p)]
            [TrivialAugmentWide(num_magnitude_bins, interpolation, fill)
             | RandAugment(num_ops, magnitude, num_magnitude_bins, interpolation, fill)
             | AutoAugment(AutoAugmentPolicy.IMAGENET, interpolation, fill)
             | AugMix(severity, interpolation, fill)]
            [RandomAffine(degrees, translate, scale, shear, interpolation, fill)]
            [RandomRotation(degrees, interpolation, fill)]
            [ColorJitter(brightness, contrast, saturation, hue)]
            [RandomGrayscale(p)]
            [GaussianBlur(kernel_size, sigma)]
            ToTensor() or PILToTensor() + ConvertImageDtype(torch.float32)
            [Normalize(mean, std)] [RandomErasing(p, scale, ratio, value)]
    eval:   Resize(size: int, interpolation) CenterCrop(size)
            ToTensor() [Normalize(mean, std)]

The tensor path, PILToTensor() first and ConvertImageDtype(torch.float32)
in place of ToTensor(), maps onto the same recipes when its resize is
antialiased (antialias=True, BILINEAR or BICUBIC): torch's antialiased
kernels are PIL's in floating point, about a level apart (see
docs/pipeline.md); its NEAREST (torch's floor(i*scale) positions) and
antialias=False/None are refused.

interpolation is BILINEAR (the default), BICUBIC or NEAREST
(InterpolationMode, or PIL's constants 2, 3, 0), computed as PIL computes
it, which is what torchvision does to PIL images: bilinear and bicubic
antialiased, nearest not (`faster serve --interpolation`). Any Resize
size at least the crop's works: Resize(256) + CenterCrop(224), or
torchvision's newer reference recipe, Resize(232) + CenterCrop(224) (with
BILINEAR). Crops are square (size an int or (s, s)). Without Normalize
the pixels are ToTensor's [0, 1]. antialias=False (a tensor-path option)
is refused for bilinear and bicubic.

The augmentations map onto `faster serve`'s flags (--auto-augment,
--ra-n, --ra-m, --magnitude-bins, --augmix-severity,
--augment-interpolation, --augment-fill, --affine-*, --rotate-degrees,
--color-jitter, --grayscale-prob, --blur-kernel, --blur-sigma,
--erasing-*), in that order only: the policy, RandomAffine,
RandomRotation, ColorJitter, RandomGrayscale, GaussianBlur, and
RandomErasing last. The warps (the policy's, RandomAffine's,
RandomRotation's) share one interpolation and one fill: a Compose whose
warps differ in them is refused (RandomAffine's and RandomRotation's
default fill 0 goes with a policy's fill=None). Their interpolation is
NEAREST (torchvision's default) or BILINEAR; expand=True and center= are
refused. AugMix only
with its default mixture_width, chain_depth, alpha and all_ops. The Go ops
compute torchvision's tensor path; on the PIL path (the reference's
Compose: the ops before PILToTensor) torchvision's PIL kernels round
differently, a few levels on the pixels the ops change (docs/pipeline.md).
The named recipes are Loader(..., augment_recipe="torchvision-ta-wide").
"""

_TRAIN = ("RandomResizedCrop [RandomHorizontalFlip] [TrivialAugmentWide|RandAugment|AutoAugment|AugMix] [RandomAffine] "
          "[RandomRotation] [ColorJitter] [RandomGrayscale] [GaussianBlur] ToTensor|PILToTensor+ConvertImageDtype "
          "[Normalize] [RandomErasing]")
_EVAL = "Resize(int) CenterCrop ToTensor [Normalize]"
_TENSOR = "or on tensors PILToTensor, then either with antialias=True, then ConvertImageDtype(float32) [Normalize]"


# `faster serve --augment-recipe` names (docs/pipeline.md, "Named recipes").
AUGMENT_RECIPES = ("torchvision", "torchvision-ta-wide", "torchvision-ra", "torchvision-aa",
                   "torchvision-augmix", "torchvision-v2")


class UnsupportedTransform(ValueError):
    """A torchvision transform the Go pipeline does not implement."""


def _name(t):
    return type(t).__name__


# The server's bounds (`faster serve` refuses the same with a usage error):
# loader.MaxResolution, augment.MaxMagnitudeBins, and float32's largest,
# the bound torch's uniform_ takes (a NaN, an infinity or a value beyond
# it raises "out of bounds for float" at torchvision's first draw).
MAX_SIDE = 16384
MAX_MAGNITUDE_BINS = 1024
_FLOAT32_MAX = 3.4028234663852886e38


def _bad(t, what, why):
    """A parameter torchvision refuses, or one the Go pipeline cannot run
    with: a ValueError naming the transform and the parameter."""
    raise ValueError("faster: %s(%s): %s" % (_name(t), what, why))


def _floats(t, attr, values):
    try:
        return [float(v) for v in values]
    except (TypeError, ValueError):
        _bad(t, "%s=%r" % (attr, values), "want numbers")


def _range(t, attr, r, lo, hi, why, low_open=False):
    """Checks the (min, max) pair r of t.attr: lo <= min <= max <= hi (min
    > lo with low_open), False for NaN."""
    a, b = _floats(t, attr, r)
    if not ((a > lo if low_open else a >= lo) and a <= b <= hi):
        _bad(t, "%s=%r" % (attr, tuple(r)), why)
    return a, b


def _prob(t, attr="p"):
    p = getattr(t, attr)
    if not 0 <= float(p) <= 1:
        _bad(t, "%s=%r" % (attr, p), "want a probability in [0, 1]")


def _side(t, size):
    if not 1 <= size <= MAX_SIDE:
        _bad(t, "size=%r" % (size,), "want 1 to %d (the side of the decoder's limit of %d pixels)" % (MAX_SIDE, MAX_SIDE * MAX_SIDE))


def _square(size, what):
    if isinstance(size, int):
        return size
    if isinstance(size, (tuple, list)) and len(size) == 1:
        return int(size[0])
    if isinstance(size, (tuple, list)) and len(size) == 2 and size[0] == size[1]:
        return int(size[0])
    raise UnsupportedTransform("faster: %s(size=%r): only square outputs (an int, or (s, s))" % (what, size))


# InterpolationMode values and PIL's constants (torchvision 0.14 accepts
# both) onto `faster serve --interpolation`.
_INTERPOLATIONS = {None: "bilinear", "bilinear": "bilinear", 2: "bilinear",
                   "bicubic": "bicubic", 3: "bicubic", "nearest": "nearest", 0: "nearest"}


def _interpolation(t, tensor=False):
    mode = getattr(t, "interpolation", None)
    name = getattr(mode, "value", mode)
    if isinstance(name, str):
        name = name.lower()
    try:
        got = _INTERPOLATIONS.get(name)
    except TypeError:  # unhashable
        got = None
    if got is None:
        raise UnsupportedTransform(
            "faster: %s(interpolation=%s): the Go pipeline resizes with PIL's bilinear, bicubic or nearest "
            "filter; use InterpolationMode.BILINEAR, BICUBIC or NEAREST" % (_name(t), name))
    antialias = getattr(t, "antialias", None)
    if tensor:
        if got == "nearest":
            raise UnsupportedTransform(
                "faster: %s(interpolation=NEAREST) on tensors: torch samples floor(i*scale), the Go pipeline PIL's "
                "pixel centres; use the PIL path (ToTensor() last, no PILToTensor())" % _name(t))
        if antialias is not True:
            raise UnsupportedTransform(
                "faster: %s(antialias=%r) on tensors: the Go pipeline always antialiases (PIL's filters); pass "
                "antialias=True" % (_name(t), antialias))
    elif got != "nearest" and antialias is False:
        raise UnsupportedTransform("faster: %s(antialias=False): the Go pipeline antialiases bilinear and bicubic "
                                   "resizing, as torchvision does on PIL images" % _name(t))
    return got


def _csv(values):
    return ",".join(repr(float(v)) for v in values)


def from_torchvision(transform):
    """The server's recipe and flags for a torchvision transform: a dict
    with transform ("train" or "eval"), resolution and args (more flags of
    `faster serve`). Raises UnsupportedTransform naming what it cannot map."""
    steps = list(getattr(transform, "transforms", [transform]))
    names = [_name(t) for t in steps]
    args = []
    i = 0

    def take(name):
        nonlocal i
        if i < len(steps) and names[i] == name:
            i += 1
            return steps[i - 1]
        return None

    tensor = take("PILToTensor") is not None  # the tensor path
    crop = take("RandomResizedCrop")
    if crop is not None:
        recipe = "train"
        args += ["--interpolation", _interpolation(crop, tensor)]
        res = _square(crop.size, "RandomResizedCrop")
        _side(crop, res)
        _range(crop, "scale", crop.scale, 0, 1, "want 0 <= min <= max <= 1 (fractions of the image's area)")
        # torchvision takes log(ratio) in float32: 0, NaN, inf or 1e300
        # raise "out of bounds for float" at its first draw.
        lo, _ = _range(crop, "ratio", crop.ratio, 0, _FLOAT32_MAX, "want 0 < min <= max <= %g (float32s: torchvision "
                       "draws log(ratio) in float32 and raises 'out of bounds for float')" % _FLOAT32_MAX, low_open=True)
        if lo < 1.4e-45:  # 0 as a float32
            _bad(crop, "ratio=%r" % (tuple(crop.ratio),), "min is 0 as a float32: torchvision raises 'out of bounds for float'")
        args += ["--crop-scale", _csv(crop.scale), "--crop-ratio", _csv(crop.ratio)]
        flip = take("RandomHorizontalFlip")
        if flip is not None:
            _prob(flip)
        args += ["--flip-prob", repr(float(flip.p)) if flip is not None else "0"]
        args += _augmentations(take, res)
    else:
        resize = take("Resize")
        center = take("CenterCrop")
        if resize is None or center is None:
            raise UnsupportedTransform(_refusal(steps, names, i))
        recipe = "eval"
        args += ["--interpolation", _interpolation(resize, tensor)]
        if not isinstance(resize.size, int) and not (isinstance(resize.size, (list, tuple)) and len(resize.size) == 1):
            raise UnsupportedTransform("faster: Resize(size=%r): only an int (the shorter edge) is supported" % (resize.size,))
        if getattr(resize, "max_size", None) is not None:
            raise UnsupportedTransform("faster: Resize(max_size=%r) is not supported" % (resize.max_size,))
        res = _square(center.size, "CenterCrop")
        _side(center, res)
        short = resize.size if isinstance(resize.size, int) else int(resize.size[0])
        _side(resize, short)
        if short < res:
            raise UnsupportedTransform("faster: Resize(%d) then CenterCrop(%d): torchvision would pad the crop; "
                                       "the Go pipeline wants Resize's size at least the crop's" % (short, res))
        args += ["--resize", str(short)]
    if not tensor and i < len(steps) and names[i] == "PILToTensor":
        # The reference presets' order: the PIL steps, then PILToTensor +
        # ConvertImageDtype (ToTensor's values, bit for bit).
        tensor = take("PILToTensor") is not None
    if tensor:
        conv = take("ConvertImageDtype")
        if conv is None:
            raise UnsupportedTransform(_refusal(steps, names, i, "ConvertImageDtype(torch.float32)"))
        if str(getattr(conv, "dtype", "")) != "torch.float32":
            raise UnsupportedTransform("faster: ConvertImageDtype(%s): only torch.float32" % (getattr(conv, "dtype", None),))
    elif take("ToTensor") is None:
        raise UnsupportedTransform(_refusal(steps, names, i, "ToTensor"))
    norm = take("Normalize")
    if norm is not None:
        mean, std = list(norm.mean), list(norm.std)
        if len(mean) != 3 or len(std) != 3:
            raise UnsupportedTransform("faster: Normalize(mean=%r, std=%r): want three channels" % (mean, std))
        if not all(abs(v) <= _FLOAT32_MAX for v in _floats(norm, "mean", mean)):
            _bad(norm, "mean=%r" % (mean,), "want finite numbers (float32s): NaN or infinite pixels otherwise")
        if not all(1.4e-45 <= v <= _FLOAT32_MAX for v in _floats(norm, "std", std)):
            # torchvision: "std evaluated to zero after conversion to
            # torch.float32, leading to division by zero".
            _bad(norm, "std=%r" % (std,), "want positive numbers, finite and above 0 as float32s (torchvision: std "
                 "evaluated to zero after conversion to torch.float32)")
    else:
        mean, std = [0, 0, 0], [1, 1, 1]  # ToTensor's [0, 1]
    args += ["--mean", _csv(mean), "--std", _csv(std)]
    erase = take("RandomErasing") if recipe == "train" else None
    if erase is not None:
        args += _erasing(erase)
    if i < len(steps):
        raise UnsupportedTransform(_refusal(steps, names, i))
    return {"transform": recipe, "resolution": res, "args": args}


def _refusal(steps, names, i, wanted=None):
    got = names[i] if i < len(names) else "the end of the Compose"
    what = ("expected %s, found %s" % (wanted, got)) if wanted else ("%s is not supported by the Go pipeline" % got)
    if got == "PILToTensor":
        what += " (for uint8 pixels: ToTensor here, or transform='train'/'eval' with layout='u8-hwc')"
    return ("faster: transform %s: %s. Supported: train = %s; eval = %s; %s; or transform='train' / 'eval' "
            "(the ImageNet recipes) with resolution=." % (" -> ".join(names), what, _TRAIN, _EVAL, _TENSOR))


def _aug_interpolation(t):
    mode = getattr(t, "interpolation", None)
    name = getattr(mode, "value", mode)
    if isinstance(name, str):
        name = name.lower()
    if name in ("nearest", 0):
        return "nearest"
    if name in ("bilinear", 2):
        return "bilinear"
    raise UnsupportedTransform("faster: %s(interpolation=%s): the Go ops warp with NEAREST or BILINEAR "
                               "(torchvision's tensor path); use one of those" % (_name(t), name))


def _fill(t):
    fill = getattr(t, "fill", None)
    if fill is None:
        return []
    if isinstance(fill, (int, float)):
        return ["--augment-fill", repr(float(fill))]
    return ["--augment-fill", _csv(fill)]


def _augmentations(take, res):
    """The flags of the augmentation steps after the flip, in the order the
    Go recipe runs them, on a res x res picture; take consumes a step by
    name."""
    args = []
    ta, ra, aa, am = take("TrivialAugmentWide"), None, None, None
    if ta is None:
        ra = take("RandAugment")
    if ta is None and ra is None:
        aa = take("AutoAugment")
    if ta is None and ra is None and aa is None:
        am = take("AugMix")
    for policy in (ta, ra):
        if policy is not None and not 2 <= policy.num_magnitude_bins <= MAX_MAGNITUDE_BINS:
            # Every draw builds a table of the bins for each op (2**40:
            # out of memory, in torchvision too).
            _bad(policy, "num_magnitude_bins=%r" % (policy.num_magnitude_bins,), "want 2 to %d" % MAX_MAGNITUDE_BINS)
    if ta is not None:
        args += ["--auto-augment", "ta-wide", "--magnitude-bins", str(int(ta.num_magnitude_bins))]
    elif ra is not None:
        if ra.num_ops < 1 or ra.num_magnitude_bins < 2 or not 0 <= ra.magnitude < ra.num_magnitude_bins:
            raise UnsupportedTransform("faster: RandAugment(num_ops=%r, magnitude=%r, num_magnitude_bins=%r): want "
                                       "num_ops >= 1 and 0 <= magnitude < num_magnitude_bins"
                                       % (ra.num_ops, ra.magnitude, ra.num_magnitude_bins))
        args += ["--auto-augment", "ra", "--ra-n", str(int(ra.num_ops)), "--ra-m", str(int(ra.magnitude)),
                 "--magnitude-bins", str(int(ra.num_magnitude_bins))]
    elif aa is not None:
        policy = getattr(aa.policy, "value", aa.policy)
        if str(policy).lower() != "imagenet":
            raise UnsupportedTransform("faster: AutoAugment(policy=%s): only AutoAugmentPolicy.IMAGENET" % (policy,))
        args += ["--auto-augment", "imagenet"]
    elif am is not None:
        for attr, default in (("mixture_width", 3), ("chain_depth", -1), ("alpha", 1.0), ("all_ops", True)):
            if getattr(am, attr, default) != default:
                raise UnsupportedTransform("faster: AugMix(%s=%r): only the default (%r) has a flag"
                                           % (attr, getattr(am, attr), default))
        args += ["--auto-augment", "augmix", "--augmix-severity", str(int(am.severity))]
    policy = ta or ra or aa or am
    if policy is not None:
        args += ["--augment-interpolation", _aug_interpolation(policy)] + _fill(policy)
    args += _geometry(policy, take("RandomAffine"), take("RandomRotation"))
    cj = take("ColorJitter")
    if cj is not None:
        ranges = []
        for attr in ("brightness", "contrast", "saturation", "hue"):
            r = getattr(cj, attr)
            if r is None:
                r = (0.0, 0.0)
            elif attr != "hue" and float(r[0]) == 0 and float(r[1]) == 0:
                raise UnsupportedTransform("faster: ColorJitter(%s=(0, 0)): a constant factor 0 is not supported "
                                           "(0,0 means off in --color-jitter)" % attr)
            elif attr != "hue":
                # torchvision draws the factor in float32: brightness=3.5e38
                # raises "to is out of bounds for float" at its first draw.
                _range(cj, attr, r, 0, _FLOAT32_MAX, "want 0 <= min <= max <= %g (torchvision draws the factor in "
                       "float32 and raises 'out of bounds for float')" % _FLOAT32_MAX)
            else:
                _range(cj, attr, r, -0.5, 0.5, "want -0.5 <= min <= max <= 0.5")
            ranges += [r[0], r[1]]
        args += ["--color-jitter", _csv(ranges)]
    gray = take("RandomGrayscale")
    if gray is not None:
        _prob(gray)
        args += ["--grayscale-prob", repr(float(gray.p))]
    blur = take("GaussianBlur")
    if blur is not None:
        kw, kh = (list(blur.kernel_size) * 2)[:2]
        lo, hi = (list(blur.sigma) * 2)[:2]
        # A sigma of 0 as a float32 (1e-300): torchvision raises "sigma
        # should have positive values".
        _range(blur, "sigma", (lo, hi), 1.4e-45, 100, "want 0 < min <= max <= 100 (min above 0 as a float32)")
        if max(int(kw), int(kh)) // 2 >= res:
            # torchvision: "Padding size should be less than the
            # corresponding input dimension".
            _bad(blur, "kernel_size=%r" % (blur.kernel_size,), "want sizes at most %d on the %dx%d crop (the reflect "
                 "padding must be below the picture's side)" % (2 * res - 1, res, res))
        args += ["--blur-kernel", "%d,%d" % (int(kw), int(kh)), "--blur-sigma", _csv([lo, hi])]
    return args


def _fill_values(fill):
    """A warp's fill as three numbers, or None for fill=None."""
    if fill is None:
        return None
    if isinstance(fill, (int, float)):
        return [float(fill)] * 3
    fill = [float(v) for v in fill]
    return fill * 3 if len(fill) == 1 else fill


def _geometry(policy, affine, rotation):
    """The flags of RandomAffine and RandomRotation, which share the
    policy's --augment-interpolation and --augment-fill."""
    args = []
    warps = [w for w in (affine, rotation) if w is not None]
    if not warps:
        return args
    for w in warps:
        if getattr(w, "center", None) is not None:
            raise UnsupportedTransform("faster: %s(center=%r): only the image centre is supported" % (_name(w), w.center))
        if getattr(w, "expand", False):
            raise UnsupportedTransform("faster: RandomRotation(expand=True): the Go ops keep the image's size")
    interp = _aug_interpolation(warps[0])
    fill = _fill_values(getattr(warps[0], "fill", 0)) or [0.0] * 3
    for w in warps[1:] + ([policy] if policy is not None else []):
        if _aug_interpolation(w) != interp:
            raise UnsupportedTransform("faster: %s and %s warp with different interpolations; the Go ops share one "
                                       "(--augment-interpolation)" % (_name(warps[0]), _name(w)))
    for w in warps[1:]:
        if (_fill_values(getattr(w, "fill", 0)) or [0.0] * 3) != fill:
            raise UnsupportedTransform("faster: %s and %s fill differently; the Go ops share one fill (--augment-fill)"
                                       % (_name(warps[0]), _name(w)))
    if policy is not None:
        pf = _fill_values(getattr(policy, "fill", None))
        if (pf or [0.0] * 3) != fill:
            raise UnsupportedTransform("faster: %s(fill=%r) and %s(fill=%r): the Go ops share one fill "
                                       "(--augment-fill; the policy's None goes with 0)"
                                       % (_name(policy), policy.fill, _name(warps[0]), warps[0].fill))
    else:
        args += ["--augment-interpolation", interp]
        if fill != [0.0] * 3:
            args += ["--augment-fill", _csv(fill)]
    for w in warps:
        _range(w, "degrees", w.degrees, -360, 360, "want finite angles, min <= max, within -360..360")
    if affine is not None:
        if affine.translate is not None:
            if not all(0 <= v <= 1 for v in _floats(affine, "translate", affine.translate)):
                _bad(affine, "translate=%r" % (affine.translate,), "want fractions in [0, 1]")
        if affine.scale is not None:
            _range(affine, "scale", affine.scale, 0, 100, "want 0 < min <= max <= 100", low_open=True)
        if affine.shear is not None:
            sh = _floats(affine, "shear", affine.shear)
            for pair in (sh[:2], sh[2:]):
                if pair:
                    _range(affine, "shear", pair, -90, 90, "want angles within (-90, 90), min <= max", low_open=True)
                    if not pair[1] < 90:
                        _bad(affine, "shear=%r" % (affine.shear,), "want angles within (-90, 90), min <= max")
        args += ["--affine-degrees", _csv(affine.degrees)]
        if affine.translate is not None:
            args += ["--affine-translate", _csv(affine.translate)]
        if affine.scale is not None:
            args += ["--affine-scale", _csv(affine.scale)]
        if affine.shear is not None:
            args += ["--affine-shear", _csv(affine.shear)]
    if rotation is not None:
        args += ["--rotate-degrees", _csv(rotation.degrees)]
    return args


def _erasing(e):
    _prob(e)
    _range(e, "scale", e.scale, 0, 1, "want 0 <= min <= max <= 1")
    # torchvision takes log(ratio) in float32: inf or 1e300 raise "out of
    # bounds for float" (before: the server panicked in rand.IntN).
    _range(e, "ratio", e.ratio, 1e-9, _FLOAT32_MAX, "want 1e-09 <= min <= max <= %g (torchvision draws log(ratio) in "
           "float32 and raises 'out of bounds for float')" % _FLOAT32_MAX)
    if not isinstance(e.value, str):
        vals = _floats(e, "value", [e.value] if isinstance(e.value, (int, float)) else e.value)
        if not all(abs(v) <= _FLOAT32_MAX for v in vals):
            _bad(e, "value=%r" % (e.value,), "want finite numbers")
    value = e.value
    if isinstance(value, str):
        if value != "random":
            raise UnsupportedTransform("faster: RandomErasing(value=%r): a number, three numbers or 'random'" % (value,))
        v = "random"
    elif isinstance(value, (int, float)):
        v = repr(float(value))
    else:
        if len(value) not in (1, 3):
            raise UnsupportedTransform("faster: RandomErasing(value=%r): a number, three numbers or 'random'" % (value,))
        v = _csv(value)
    return ["--erasing-prob", repr(float(e.p)), "--erasing-scale", _csv(e.scale), "--erasing-ratio", _csv(e.ratio),
            "--erasing-value", v]
