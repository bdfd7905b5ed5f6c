"""A torchvision transform, as a script already holds it, mapped onto the Go
pipeline's ops, in the user's own order:

    train = T.Compose([T.RandomResizedCrop(224), T.RandomHorizontalFlip(), T.ToTensor(),
                       T.Normalize(mean, std)])
    loader = faster.Loader(traindir, transform=train)

from_torchvision(t) is a list of op specs, the JSON of the Go side's
augment.Recipe (`faster serve --spec`'s "augment"): one dict per
torchvision transform, {"op": its class name, its arguments by
torchvision's keyword names}, in the order torchvision runs them. Taken
apart:

- a Compose, anything holding one (or a list) in `.transforms` (the
  classification reference's ClassificationPresetTrain/Eval), nested to
  any depth;
- ImageClassification (`weights.transforms()`): Resize(resize_size,
  interpolation) + CenterCrop(crop_size) + PILToTensor +
  ConvertImageDtype(float32) + Normalize(mean, std), what its forward does
  to a PIL image;
- every transform of torchvision.transforms by its class name and
  arguments: RandomResizedCrop, Resize, CenterCrop, RandomCrop (padding,
  pad_if_needed, fill, padding_mode), RandomHorizontalFlip,
  RandomVerticalFlip, ColorJitter, RandomGrayscale, Grayscale,
  GaussianBlur, RandomRotation, RandomAffine, TrivialAugmentWide,
  RandAugment, AutoAugment (every policy), AugMix, PILToTensor, ToTensor,
  ConvertImageDtype, Normalize (any channel count), RandomErasing. Another
  class of torchvision.transforms is sent by name alone, and the server
  refuses it naming it and its position, before the first batch.

Python checks types only (an object of torchvision's, numbers where
numbers go, JSON's finite numbers); the values are checked once, by the Go
side (augment.Recipe.Problems: every problem at once, each named by its
path, augment[2].degrees, which the loader turns into the step's place in
the user's transform, see describe()). An object that is not a torchvision
transform (a Lambda, a class of the script's own) raises
UnsupportedTransform naming its class and place.

interpolation is the InterpolationMode's name ("bilinear", "bicubic",
"nearest", ...; PIL's constants 0, 2, 3 too). The named recipes are
Loader(..., augment_recipe="torchvision-ta-wide").
"""
import math
import numbers

# `faster serve --augment-recipe` names (docs/pipeline.md, "Named recipes").
AUGMENT_RECIPES = ("torchvision", "torchvision-ta-wide", "torchvision-ra", "torchvision-aa",
                   "torchvision-augmix", "torchvision-v2")


class UnsupportedTransform(ValueError):
    """A transform that cannot be sent to the Go pipeline: not one of
    torchvision's, or of the wrong type."""


class Ops(list):
    """The op specs of a transform (a list of dicts, JSON as it is), with
    where each came from in the user's transform: where[i] is the place of
    op i, e.g. "transforms[1].transforms[0] (RandomCrop)"."""

    def __init__(self, ops=(), where=()):
        super().__init__(ops)
        self.where = list(where)


def _name(t):
    return type(t).__name__


# PIL's constants (torchvision 0.14 takes them for InterpolationMode).
_PIL_FILTERS = {0: "nearest", 1: "lanczos", 2: "bilinear", 3: "bicubic", 4: "box", 5: "hamming"}


class _Mapper:
    def __init__(self):
        self.ops, self.where = [], []

    def fail(self, place, t, why):
        raise UnsupportedTransform("faster: %s (%s): %s" % (place, _name(t), why))

    # Type checks of one argument; each returns the JSON value.

    def number(self, place, t, attr, v):
        if isinstance(v, bool) or not isinstance(v, numbers.Real):
            self.fail(place, t, "%s=%r: want a number" % (attr, v))
        v = float(v) if not isinstance(v, numbers.Integral) else int(v)
        if isinstance(v, float) and not math.isfinite(v):
            self.fail(place, t, "%s=%r: want a finite number (torchvision refuses it at its first draw; JSON "
                      "cannot carry it)" % (attr, v))
        return v

    def numbers_(self, place, t, attr, v):
        """A number or a sequence of numbers, as given."""
        if isinstance(v, (list, tuple)):
            return [self.number(place, t, "%s[%d]" % (attr, k), x) for k, x in enumerate(v)]
        try:  # a tensor or numpy array
            import numpy as np
            if isinstance(v, np.ndarray):
                return [self.number(place, t, attr, float(x)) for x in v.reshape(-1)]
        except ImportError:
            pass
        if hasattr(v, "tolist") and not isinstance(v, numbers.Real):
            return self.numbers_(place, t, attr, v.tolist())
        return self.number(place, t, attr, v)

    def optional(self, place, t, attr, v):
        return None if v is None else self.numbers_(place, t, attr, v)

    def boolean(self, place, t, attr, v):
        if v is None:
            return None
        if not isinstance(v, bool):
            self.fail(place, t, "%s=%r: want True or False" % (attr, v))
        return v

    def string(self, place, t, attr, v):
        v = getattr(v, "value", v)  # an Enum: AutoAugmentPolicy, InterpolationMode
        if not isinstance(v, str):
            self.fail(place, t, "%s=%r: want a name" % (attr, v))
        return v.lower()

    def interpolation(self, place, t, v):
        v = getattr(v, "value", v)
        if isinstance(v, numbers.Integral) and not isinstance(v, bool) and int(v) in _PIL_FILTERS:
            return _PIL_FILTERS[int(v)]
        return self.string(place, t, "interpolation", v)

    def dtype(self, place, t, v):
        s = str(v)
        if not s.startswith("torch."):
            self.fail(place, t, "dtype=%r: want a torch dtype" % (v,))
        return s[len("torch."):]

    # The transforms.

    def emit(self, place, t, op, **args):
        spec = {"op": op}
        spec.update((k, v) for k, v in args.items() if v is not None)
        self.ops.append(spec)
        self.where.append("%s (%s)" % (place, _name(t)))

    def walk(self, t, place):
        name = _name(t)
        inner = getattr(t, "transforms", None)
        if isinstance(inner, (list, tuple)) and name not in _TORCHVISION_CHOICES:
            for k, s in enumerate(inner):
                self.walk(s, "%s.transforms[%d]" % (place, k))
            return
        if inner is not None and name not in _TORCHVISION_CHOICES and not _is_torchvision(t):
            # An object holding its Compose (ClassificationPresetTrain).
            self.walk(inner, place + ".transforms")
            return
        if name == "ImageClassification" and hasattr(t, "crop_size") and hasattr(t, "resize_size"):
            self.image_classification(place, t)
            return
        if not _is_torchvision(t) or name in _PYTHON_CODE:
            why = ("runs Python code the Go pipeline cannot run" if name in _PYTHON_CODE
                   else "not a torchvision transform the Go pipeline knows")
            self.fail(place, t, why + "; supported: " + ", ".join(sorted(_ARGS)))
        fields = _ARGS.get(name)
        if fields is None:
            # torchvision's, without a Go op: the server names it.
            self.emit(place, t, name)
            return
        args = {}
        for attr, kind in fields:
            if not hasattr(t, attr):
                self.fail(place, t, "no attribute %s (torchvision 0.14's %s has one)" % (attr, name))
            args[attr] = self.convert(place, t, attr, kind, getattr(t, attr))
        self.emit(place, t, name, **args)

    def convert(self, place, t, attr, kind, v):
        if kind == "nums":
            return self.optional(place, t, attr, v)
        if kind == "bool":
            return self.boolean(place, t, attr, v)
        if kind == "interp":
            return self.interpolation(place, t, v)
        if kind == "str":
            return None if v is None else self.string(place, t, attr, v)
        if kind == "dtype":
            return self.dtype(place, t, v)
        if kind == "value":  # RandomErasing: a number, numbers or "random"
            return v if isinstance(v, str) else self.numbers_(place, t, attr, v)
        raise AssertionError(kind)

    def image_classification(self, place, t):
        """torchvision.transforms._presets.ImageClassification's forward on a
        PIL image: resize, centre crop, pil_to_tensor, float, normalize."""
        interp = self.interpolation(place, t, getattr(t, "interpolation", "bilinear"))
        self.emit(place, t, "Resize", size=self.numbers_(place, t, "resize_size", t.resize_size), interpolation=interp)
        self.emit(place, t, "CenterCrop", size=self.numbers_(place, t, "crop_size", t.crop_size))
        self.emit(place, t, "PILToTensor")
        self.emit(place, t, "ConvertImageDtype", dtype="float32")
        self.emit(place, t, "Normalize", mean=self.numbers_(place, t, "mean", t.mean),
                  std=self.numbers_(place, t, "std", t.std))


# The arguments of each torchvision class the Go pipeline runs, by
# torchvision's keyword names (its attributes of the same names), and
# their kinds: nums (a number or numbers, None for unset), bool, interp,
# str, dtype, value.
_ARGS = {
    "RandomResizedCrop": [("size", "nums"), ("scale", "nums"), ("ratio", "nums"), ("interpolation", "interp"),
                          ("antialias", "bool")],
    "Resize": [("size", "nums"), ("interpolation", "interp"), ("max_size", "nums"), ("antialias", "bool")],
    "CenterCrop": [("size", "nums")],
    "RandomCrop": [("size", "nums"), ("padding", "nums"), ("pad_if_needed", "bool"), ("fill", "nums"),
                   ("padding_mode", "str")],
    "RandomHorizontalFlip": [("p", "nums")],
    "RandomVerticalFlip": [("p", "nums")],
    "ColorJitter": [("brightness", "nums"), ("contrast", "nums"), ("saturation", "nums"), ("hue", "nums")],
    "RandomGrayscale": [("p", "nums")],
    "Grayscale": [("num_output_channels", "nums")],
    "GaussianBlur": [("kernel_size", "nums"), ("sigma", "nums")],
    "RandomRotation": [("degrees", "nums"), ("interpolation", "interp"), ("expand", "bool"), ("center", "nums"),
                       ("fill", "nums")],
    "RandomAffine": [("degrees", "nums"), ("translate", "nums"), ("scale", "nums"), ("shear", "nums"),
                     ("interpolation", "interp"), ("fill", "nums"), ("center", "nums")],
    "TrivialAugmentWide": [("num_magnitude_bins", "nums"), ("interpolation", "interp"), ("fill", "nums")],
    "RandAugment": [("num_ops", "nums"), ("magnitude", "nums"), ("num_magnitude_bins", "nums"),
                    ("interpolation", "interp"), ("fill", "nums")],
    "AutoAugment": [("policy", "str"), ("interpolation", "interp"), ("fill", "nums")],
    "AugMix": [("severity", "nums"), ("mixture_width", "nums"), ("chain_depth", "nums"), ("alpha", "nums"),
               ("all_ops", "bool"), ("interpolation", "interp"), ("fill", "nums")],
    "PILToTensor": [],
    "ToTensor": [],
    "ConvertImageDtype": [("dtype", "dtype")],
    "Normalize": [("mean", "nums"), ("std", "nums"), ("inplace", "bool")],
    "RandomErasing": [("p", "nums"), ("scale", "nums"), ("ratio", "nums"), ("value", "value"), ("inplace", "bool")],
}

# torchvision's transforms that hold transforms but are not a sequence
# run in order (the Go side has none of them: sent by name, refused there).
_TORCHVISION_CHOICES = ("RandomApply", "RandomChoice", "RandomOrder")
# torchvision's transforms that wrap the script's Python code.
_PYTHON_CODE = ("Lambda",)


def _is_torchvision(t):
    return (type(t).__module__ or "").startswith("torchvision.transforms")


def from_torchvision(transform):
    """The op specs (augment.Recipe's JSON, a list of dicts in torchvision's
    order) of a torchvision transform: a Compose, anything holding one in
    .transforms, a list of transforms, or one transform. Raises
    UnsupportedTransform naming the class and place of a step that is not
    torchvision's, or whose arguments have the wrong types. The result's
    .where names each op's place in the transform."""
    m = _Mapper()
    if isinstance(transform, (list, tuple)):
        for k, s in enumerate(transform):
            m.walk(s, "transform[%d]" % k)
    else:
        m.walk(transform, "transform")
    if not m.ops:
        raise UnsupportedTransform("faster: transform %r holds no transforms" % (transform,))
    return Ops(m.ops, m.where)


def explain(ops, message):
    """message (the server's problems, one a line) with every field path of
    an op, augment[2].degrees, told in the user's words: "augment[2]
    (transform.transforms[1].transforms[0] (RandomRotation)).degrees"."""
    import re
    where = getattr(ops, "where", None) or []

    def place(m):
        i = int(m.group(1))
        return m.group(0) + (" (%s)" % where[i] if 0 <= i < len(where) else "")
    return re.sub(r"augment\[(\d+)\]", place, message)


def describe(ops, field):
    """A problem's field path from the server (augment[2].degrees) in the
    user's words: "transform.transforms[1] (RandomRotation): degrees"."""
    if not field.startswith("augment["):
        return field
    end = field.find("]")
    try:
        i = int(field[len("augment["):end])
    except ValueError:
        return field
    where = getattr(ops, "where", None)
    if where is None or not 0 <= i < len(where):
        return field
    rest = field[end + 1:].lstrip(".")
    return where[i] + (": " + rest if rest else "")
