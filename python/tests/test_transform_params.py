"""A torchvision transform whose parameters torchvision itself refuses (at
construction or at its first draw: torch draws in float32 and raises "out
of bounds for float"), or that would crash or serve garbage, is refused by
faster.Loader with a ValueError naming the step (its class and place in
the transform) and the parameter, before the first batch (issue 41).

Since issue 40 the values are checked once, by the Go side
(augment.Recipe.Problems through `faster serve --spec`): Python checks
types only. A NaN or an infinity, which JSON cannot carry, is a type
problem: faster.transforms refuses it before any server starts."""
import importlib.util
import os
import shutil
import tempfile
import unittest
import warnings

import numpy as np

import faster
from faster.transforms import UnsupportedTransform, from_torchvision

HAVE_TV = importlib.util.find_spec("torchvision") is not None
REQUIRE = os.environ.get("FASTER_REQUIRE_DATA") == "1"
BIN = os.environ.get("FASTER_BIN")
INF, NAN = float("inf"), float("nan")


def train(*aug, crop=None, flip=None, tail=None):
    from torchvision import transforms as T
    return [crop or T.RandomResizedCrop(32)] + ([flip] if flip else []) + list(aug) + [T.ToTensor()] + (tail or [])


@unittest.skipUnless(HAVE_TV or REQUIRE, "no torchvision")
class TransformParamsTest(unittest.TestCase):
    def test_non_finite_refused_before_any_server(self):
        from torchvision import transforms as T
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # torchvision's "Scale and ratio should be of kind (min, max)"
            cases = [
                (train(crop=T.RandomResizedCrop(32, ratio=(INF, INF))), "ratio"),
                (train(crop=T.RandomResizedCrop(32, ratio=(NAN, NAN))), "ratio"),
                (train(crop=T.RandomResizedCrop(32, scale=(NAN, NAN))), "scale"),
                (train(flip=T.RandomHorizontalFlip(NAN)), "RandomHorizontalFlip"),
                (train(T.ColorJitter(contrast=INF)), "contrast"),
                (train(T.ColorJitter(saturation=(0, INF))), "saturation"),
                (train(T.RandomGrayscale(NAN)), "RandomGrayscale"),
                (train(T.GaussianBlur(3, sigma=(1, INF))), "sigma"),
                (train(T.RandomRotation(INF)), "degrees"),
                (train(T.RandomAffine(0, scale=(1, INF))), "scale"),
                (train(T.RandomAffine(0, shear=NAN)), "shear"),
                (train(tail=[T.Normalize([NAN] * 3, [1] * 3)]), "mean"),
                (train(tail=[T.Normalize([0] * 3, [INF] * 3)]), "std"),
                (train(tail=[T.RandomErasing(p=1, ratio=(INF, INF))]), "ratio"),
                (train(tail=[T.RandomErasing(p=NAN)]), "RandomErasing"),
                (train(tail=[T.RandomErasing(p=1, value=INF)]), "value"),
            ]
        for steps, word in cases:
            with self.subTest(steps=[repr(s) for s in steps]):
                tf = T.Compose(steps)
                with self.assertRaises(UnsupportedTransform) as cm:
                    from_torchvision(tf)
                self.assertIn(word, str(cm.exception))
                self.assertIn("finite", str(cm.exception))
                with self.assertRaises(ValueError):  # before any server
                    faster.Loader("/nonexistent", transform=tf, binary="/nonexistent/faster")

    def test_torchvisions_edges_are_taken(self):
        from torchvision import transforms as T
        for steps in (
            [T.Resize(16384), T.CenterCrop(224), T.ToTensor()],
            train(T.TrivialAugmentWide(num_magnitude_bins=1024)),
            train(crop=T.RandomResizedCrop(32, ratio=(1e-30, 3e38))),
            train(T.ColorJitter(brightness=3e38, hue=0.5)),
            train(T.GaussianBlur(63, sigma=100)),
            train(tail=[T.Normalize([0] * 3, [3e38] * 3), T.RandomErasing(p=1, ratio=(3e38, 3e38))]),
        ):
            with self.subTest(steps=[repr(s) for s in steps]):
                from_torchvision(T.Compose(steps))
        # The values reach the server as given.
        ops = from_torchvision(T.Compose(train(crop=T.RandomResizedCrop(32, scale=(0.5, 1), ratio=(1e-30, 3e38)))))
        self.assertEqual((ops[0]["scale"], ops[0]["ratio"]), ([0.5, 1], [1e-30, 3e38]))


@unittest.skipUnless(BIN, "FASTER_BIN not set: run through `go test ./serve`")
class TransformValuesByServerTest(unittest.TestCase):
    """The values torchvision refuses, refused by the server's one check,
    named by step and argument, before the first batch."""

    @classmethod
    def setUpClass(cls):
        from PIL import Image
        cls.root = tempfile.mkdtemp(prefix="faster-params-")
        for c in range(2):
            os.makedirs(os.path.join(cls.root, "c%d" % c))
            Image.fromarray(np.full((40, 48, 3), 60 + 80 * c, np.uint8)).save(os.path.join(cls.root, "c%d" % c, "a.png"))

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.root, ignore_errors=True)

    @unittest.skipUnless(HAVE_TV or REQUIRE, "no torchvision")
    def test_refused_by_server(self):
        from torchvision import transforms as T
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            cases = [
                # Before issue 41: fatal error: out of memory in the server.
                ([T.Resize(2 ** 40), T.CenterCrop(224), T.ToTensor()], "Resize"),
                ([T.Resize(16385), T.CenterCrop(224), T.ToTensor()], "Resize"),
                (train(crop=T.RandomResizedCrop(100000)), "RandomResizedCrop"),
                (train(T.TrivialAugmentWide(num_magnitude_bins=2 ** 40)), "num_magnitude_bins"),
                (train(T.RandAugment(num_magnitude_bins=100000)), "num_magnitude_bins"),
                # Before: an error blaming an image, or taken.
                (train(crop=T.RandomResizedCrop(32, ratio=(0, 0))), "ratio"),
                (train(crop=T.RandomResizedCrop(32, ratio=(2, 1))), "ratio"),
                (train(crop=T.RandomResizedCrop(32, scale=(0.5, 0.2))), "scale"),
                (train(flip=T.RandomHorizontalFlip(2)), "RandomHorizontalFlip"),
                # Before: black pictures (torchvision: "to is out of bounds for float").
                (train(T.ColorJitter(brightness=3.5e38)), "brightness"),
                (train(T.GaussianBlur(65)), "kernel"),
                (train(T.GaussianBlur(3, sigma=1e-300)), "sigma"),
                # Normalize: torchvision's "std evaluated to zero".
                (train(tail=[T.Normalize([0] * 3, [1e-300] * 3)]), "std"),
                # Before: panic: invalid argument to IntN in the server.
                (train(tail=[T.RandomErasing(p=1, ratio=(1e300, 1e300))]), "ratio"),
            ]
        for steps, word in cases:
            with self.subTest(steps=[repr(s) for s in steps]):
                with self.assertRaises(ValueError) as cm:
                    with faster.Loader(self.root, transform=T.Compose(steps), batch_size=2, output="numpy", rank=0,
                                       world_size=1, workers=1) as loader:
                        next(iter(loader.batches()))
                msg = str(cm.exception)
                self.assertIn(word, msg)
                # The step's place in the user's transform.
                self.assertIn("transform.transforms[", msg)


if __name__ == "__main__":
    unittest.main()
