"""A torchvision transform whose parameters torchvision itself refuses (at
construction or at its first draw: torch draws in float32 and raises "out
of bounds for float"), or that would crash or serve garbage, is refused by
faster.Loader with a ValueError naming the transform and the parameter,
before any server starts (issue 41). No binary needed."""
import importlib.util
import os
import unittest
import warnings

import faster
from faster.transforms import from_torchvision

HAVE_TV = importlib.util.find_spec("torchvision") is not None
REQUIRE = os.environ.get("FASTER_REQUIRE_DATA") == "1"
INF, NAN = float("inf"), float("nan")


@unittest.skipUnless(HAVE_TV or REQUIRE, "no torchvision")
class TransformParamsTest(unittest.TestCase):
    def refused(self, steps, word):
        from torchvision import transforms as T
        tf = T.Compose(steps)
        with self.assertRaises(ValueError) as cm:
            from_torchvision(tf)
        self.assertIn(word, str(cm.exception))
        # faster.Loader refuses it the same way, before any server.
        with self.assertRaises(ValueError):
            faster.Loader("/nonexistent", transform=tf, binary="/nonexistent/faster")

    def train(self, *aug, crop=None, flip=None, tail=None):
        from torchvision import transforms as T
        return [crop or T.RandomResizedCrop(32)] + ([flip] if flip else []) + list(aug) + [T.ToTensor()] + (tail or [])

    def test_refused(self):
        from torchvision import transforms as T
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # torchvision's "Scale and ratio should be of kind (min, max)"
            cases = [
                # Before: fatal error: out of memory in the server.
                ([T.Resize(2 ** 40), T.CenterCrop(224), T.ToTensor()], "Resize"),
                ([T.Resize(16385), T.CenterCrop(224), T.ToTensor()], "Resize"),
                (self.train(crop=T.RandomResizedCrop(100000)), "RandomResizedCrop"),
                (self.train(T.TrivialAugmentWide(num_magnitude_bins=2 ** 40)), "num_magnitude_bins"),
                (self.train(T.RandAugment(num_magnitude_bins=100000)), "num_magnitude_bins"),
                # Before: an error blaming an image, or taken.
                (self.train(crop=T.RandomResizedCrop(32, ratio=(INF, INF))), "ratio"),
                (self.train(crop=T.RandomResizedCrop(32, ratio=(0, 0))), "ratio"),
                (self.train(crop=T.RandomResizedCrop(32, ratio=(NAN, NAN))), "ratio"),
                (self.train(crop=T.RandomResizedCrop(32, ratio=(2, 1))), "ratio"),
                (self.train(crop=T.RandomResizedCrop(32, scale=(NAN, NAN))), "scale"),
                (self.train(crop=T.RandomResizedCrop(32, scale=(0.5, 0.2))), "scale"),
                (self.train(flip=T.RandomHorizontalFlip(NAN)), "RandomHorizontalFlip"),
                (self.train(flip=T.RandomHorizontalFlip(2)), "RandomHorizontalFlip"),
                # Before: black pictures (torchvision: "to is out of bounds for float").
                (self.train(T.ColorJitter(brightness=3.5e38)), "brightness"),
                (self.train(T.ColorJitter(contrast=INF)), "contrast"),
                (self.train(T.ColorJitter(saturation=(0, INF))), "saturation"),
                (self.train(T.RandomGrayscale(NAN)), "RandomGrayscale"),
                (self.train(T.GaussianBlur(3, sigma=(1, INF))), "sigma"),
                (self.train(T.GaussianBlur(65)), "kernel_size"),
                (self.train(T.GaussianBlur(3, sigma=1e-300)), "sigma"),
                (self.train(T.RandomRotation(INF)), "degrees"),
                (self.train(T.RandomAffine(0, scale=(1, INF))), "scale"),
                (self.train(T.RandomAffine(0, shear=NAN)), "shear"),
                # Normalize: NaN pixels, or torchvision's "std evaluated to zero".
                (self.train(tail=[T.Normalize([NAN] * 3, [1] * 3)]), "mean"),
                (self.train(tail=[T.Normalize([0] * 3, [1e-300] * 3)]), "std"),
                (self.train(tail=[T.Normalize([0] * 3, [INF] * 3)]), "std"),
                # Before: panic: invalid argument to IntN in the server.
                (self.train(tail=[T.RandomErasing(p=1, ratio=(INF, INF))]), "ratio"),
                (self.train(tail=[T.RandomErasing(p=1, ratio=(1e300, 1e300))]), "ratio"),
                (self.train(tail=[T.RandomErasing(p=NAN)]), "RandomErasing"),
                (self.train(tail=[T.RandomErasing(p=1, value=INF)]), "value"),
            ]
        for steps, word in cases:
            with self.subTest(steps=[repr(s) for s in steps]):
                self.refused(steps, word)

    def test_torchvisions_edges_are_taken(self):
        from torchvision import transforms as T
        for steps in (
            [T.Resize(16384), T.CenterCrop(224), T.ToTensor()],
            self.train(T.TrivialAugmentWide(num_magnitude_bins=1024)),
            self.train(crop=T.RandomResizedCrop(32, ratio=(1e-30, 3e38))),
            self.train(T.ColorJitter(brightness=3e38, hue=0.5)),
            self.train(T.GaussianBlur(63, sigma=100)),  # --blur-sigma takes up to 100
            self.train(tail=[T.Normalize([0] * 3, [3e38] * 3), T.RandomErasing(p=1, ratio=(3e38, 3e38))]),
        ):
            with self.subTest(steps=[repr(s) for s in steps]):
                from_torchvision(T.Compose(steps))
        # The checked values still reach the server.
        a = from_torchvision(T.Compose(self.train(crop=T.RandomResizedCrop(32, scale=(0.5, 1), ratio=(1e-30, 3e38)))))["args"]
        self.assertEqual(a[a.index("--crop-scale") + 1], "0.5,1.0")
        self.assertEqual(a[a.index("--crop-ratio") + 1], "1e-30,3e+38")


if __name__ == "__main__":
    unittest.main()
