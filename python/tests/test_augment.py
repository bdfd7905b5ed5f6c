"""Issue 27 item 5: the augmentations reachable three ways with one
meaning. A torchvision Compose handed to faster.Loader, the named recipe
(augment_recipe=, `faster serve --augment-recipe`) and the flags the
Compose maps onto give the same batches, bit for bit (the Go test
cmd/faster TestAugmentRecipeEqualsFlags holds each recipe to its flags);
since issue 40 the Compose is the loader's ops in its own order, and what
the Go ops do not do is refused by the server, naming the step."""
import importlib.util
import os
import shutil
import tempfile
import unittest

import numpy as np

import faster
from faster.transforms import from_torchvision

from test_loader import REQUIRE, digest

HAVE_TV = importlib.util.find_spec("torchvision") is not None
BIN = os.environ.get("FASTER_BIN")
IMAGENET = ([0.485, 0.456, 0.406], [0.229, 0.224, 0.225])


def reference(T, size, policy=None, erase=0.0):
    """torchvision's references/classification/presets.py
    ClassificationPresetTrain (0.14), interpolation BILINEAR."""
    import torch
    B = T.InterpolationMode.BILINEAR
    steps = [T.RandomResizedCrop(size, interpolation=B), T.RandomHorizontalFlip(0.5)]
    if policy == "ra":
        steps.append(T.RandAugment(interpolation=B, magnitude=9))
    elif policy == "ta_wide":
        steps.append(T.TrivialAugmentWide(interpolation=B))
    elif policy == "augmix":
        steps.append(T.AugMix(interpolation=B, severity=3))
    elif policy == "imagenet":
        steps.append(T.AutoAugment(policy=T.AutoAugmentPolicy.IMAGENET, interpolation=B))
    steps += [T.PILToTensor(), T.ConvertImageDtype(torch.float), T.Normalize(*IMAGENET)]
    if erase > 0:
        steps.append(T.RandomErasing(p=erase))
    return T.Compose(steps)


@unittest.skipUnless(BIN, "FASTER_BIN not set: run through `go test ./serve`")
class AugmentThreeWaysTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        from PIL import Image
        cls.root = tempfile.mkdtemp(prefix="faster-augment-")
        rng = np.random.default_rng(1)
        for c in range(2):
            os.makedirs(os.path.join(cls.root, "c%d" % c))
            for i in range(5):
                h, w = 48 + 4 * i, 64 - 2 * i
                y, x = np.mgrid[0:h, 0:w]
                px = np.stack([x * 4, y * 5, (x + y) * 2 + 60 * c], -1) + rng.integers(0, 40, (h, w, 3))
                Image.fromarray(np.clip(px, 0, 255).astype(np.uint8)).save(
                    os.path.join(cls.root, "c%d" % c, "%02d.jpg" % i), quality=90)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.root, ignore_errors=True)

    def epochs(self, n=1, **kw):
        args = dict(batch_size=4, seed=5, workers=1, output="numpy", rank=0, world_size=1, resolution=32)
        args.update(kw)
        with faster.Loader(self.root, **args) as l:
            return [[digest(b.images, b.labels, b.keys) for b in l.batches()] for _ in range(n)]

    @unittest.skipUnless(HAVE_TV or REQUIRE, "no torchvision")
    def test_compose_equals_named_recipe(self):
        from torchvision import transforms as T
        plain = self.epochs()[0]
        for recipe, policy, erase in (("torchvision", None, 0.0), ("torchvision-ta-wide", "ta_wide", 0.0),
                                      ("torchvision-ra", "ra", 0.0), ("torchvision-aa", "imagenet", 0.0),
                                      ("torchvision-augmix", "augmix", 0.0), ("torchvision-v2", "ta_wide", 0.1)):
            tf = reference(T, 32, policy, erase)
            by_compose = self.epochs(transform=tf)[0]
            by_name = self.epochs(transform="train", augment_recipe=recipe)[0]
            self.assertEqual(by_compose, by_name, recipe)
            self.assertEqual(by_name == plain, recipe == "torchvision", recipe)

    @unittest.skipUnless(HAVE_TV or REQUIRE, "no torchvision")
    def test_reference_eval_preset(self):
        # ClassificationPresetEval(crop_size=32, resize_size=33): the v2
        # recipe's Resize(232/224 of the crop) + CenterCrop, PILToTensor,
        # ConvertImageDtype, Normalize.
        import torch
        from torchvision import transforms as T
        tf = T.Compose([T.Resize(33, interpolation=T.InterpolationMode.BILINEAR), T.CenterCrop(32), T.PILToTensor(),
                        T.ConvertImageDtype(torch.float), T.Normalize(*IMAGENET)])
        v2 = self.epochs(transform="eval", augment_recipe="torchvision-v2")
        self.assertEqual(self.epochs(transform=tf), v2)
        self.assertNotEqual(self.epochs(transform="eval"), v2, "Resize(232/224) gave Resize(256/224)'s pixels")

    @unittest.skipUnless(HAVE_TV or REQUIRE, "no torchvision")
    def test_epoch_is_seed_epoch_sample(self):
        from torchvision import transforms as T
        tf = T.Compose([T.RandomResizedCrop(32), T.RandomHorizontalFlip(), T.RandAugment(num_ops=3, magnitude=12),
                        T.ColorJitter(0.4, 0.4, 0.4, 0.1), T.RandomGrayscale(0.3), T.ToTensor(),
                        T.Normalize(*IMAGENET), T.RandomErasing(p=0.5, value="random")])
        e0, e1 = self.epochs(2, transform=tf)
        self.assertNotEqual(e0, e1)
        self.assertEqual(self.epochs(transform=tf, epoch=1)[0], e1, "a fresh loader at epoch=1")

    @unittest.skipUnless(HAVE_TV or REQUIRE, "no torchvision")
    def test_compose_mapping_and_refusals(self):
        # The Compose's steps become the loader's ops (augment.Recipe) in its
        # order, with torchvision's arguments (issue 40; before, flags of
        # one fixed order).
        import torch
        from torchvision import transforms as T
        B, N = T.InterpolationMode.BILINEAR, T.InterpolationMode.NEAREST
        tf = T.Compose([T.RandomResizedCrop(32), T.RandomHorizontalFlip(),
                        T.RandAugment(num_ops=3, magnitude=5, num_magnitude_bins=11, interpolation=B, fill=[1, 2, 3]),
                        T.ColorJitter(brightness=0.4, contrast=(0.5, 1.5), hue=0.1), T.RandomGrayscale(0.2),
                        T.PILToTensor(), T.ConvertImageDtype(torch.float), T.Normalize(*IMAGENET),
                        T.RandomErasing(p=0.25, scale=(0.1, 0.2), ratio=(0.5, 2.0), value=(0.5, 0.0, -0.5))])
        ops = from_torchvision(tf)
        self.assertEqual(ops[2], {"op": "RandAugment", "num_ops": 3, "magnitude": 5, "num_magnitude_bins": 11,
                                  "interpolation": "bilinear", "fill": [1, 2, 3]})
        self.assertEqual(ops[3], {"op": "ColorJitter", "brightness": [0.6, 1.4], "contrast": [0.5, 1.5],
                                  "hue": [-0.1, 0.1]})
        self.assertEqual(ops[4], {"op": "RandomGrayscale", "p": 0.2})
        self.assertEqual(ops[8], {"op": "RandomErasing", "p": 0.25, "scale": [0.1, 0.2], "ratio": [0.5, 2.0],
                                  "value": [0.5, 0.0, -0.5], "inplace": False})
        with faster.Loader(self.root, batch_size=3, transform=tf, output="numpy", rank=0, world_size=1, workers=1) as l:
            self.assertEqual(np.asarray(next(l.batches()).images).shape, (3, 3, 32, 32))
        ops = from_torchvision(T.Compose([T.RandomResizedCrop(32), T.TrivialAugmentWide(interpolation=N, fill=7),
                                          T.ToTensor()]))
        self.assertEqual(ops[1], {"op": "TrivialAugmentWide", "num_magnitude_bins": 31, "interpolation": "nearest",
                                  "fill": 7})
        crop = T.RandomResizedCrop(32)
        # Orders and arguments the one fixed order refused, now run as
        # written (issue 40).
        for steps in ([crop, T.GaussianBlur(3), T.ColorJitter(0.4), T.ToTensor()],
                      [crop, T.RandomRotation(10), T.RandomAffine(5), T.ToTensor()],
                      [crop, T.RandomRotation(10, center=(1, 1)), T.ToTensor()],
                      [crop, T.RandomAffine(5, interpolation=B), T.RandomRotation(10), T.ToTensor()],
                      [crop, T.TrivialAugmentWide(), T.RandomRotation(10, fill=9), T.ToTensor()],
                      [crop, T.ColorJitter(0.4), T.TrivialAugmentWide(), T.ToTensor()],
                      [crop, T.AutoAugment(T.AutoAugmentPolicy.CIFAR10), T.ToTensor()],
                      [crop, T.AugMix(mixture_width=2), T.ToTensor()],
                      [T.Resize(36), T.CenterCrop(32), T.ToTensor(), T.RandomErasing()],
                      [crop, T.ToTensor(), T.RandomErasing(), T.Normalize(*IMAGENET)]):
            with self.subTest(steps=[repr(s) for s in steps]):
                with faster.Loader(self.root, batch_size=2, transform=T.Compose(steps), output="numpy", rank=0,
                                   world_size=1, workers=1) as l:
                    self.assertEqual(np.asarray(next(l.batches()).images).shape, (2, 3, 32, 32))
        # What the Go ops do not do is refused by the server, before the
        # first batch, naming the step's class, its place and the argument.
        for steps, words in (
                ([crop, T.RandomPerspective(), T.ToTensor()], ("transforms[1]", "RandomPerspective")),
                ([crop, T.RandomRotation(10, expand=True), T.ToTensor()], ("transforms[1]", "expand")),
                ([crop, T.RandAugment(magnitude=31), T.ToTensor()], ("transforms[1]", "RandAugment", "magnitude"))):
            with self.subTest(steps=[repr(s) for s in steps]):
                with self.assertRaises(ValueError) as cm:
                    with faster.Loader(self.root, batch_size=2, transform=T.Compose(steps), output="numpy", rank=0,
                                       world_size=1, workers=1) as l:
                        next(l.batches())
                for w in words:
                    self.assertIn(w, str(cm.exception))
        with self.assertRaises(ValueError):
            faster.Loader(self.root, transform=tf, augment_recipe="torchvision-v2")
        with self.assertRaises(ValueError):
            faster.Loader(self.root, augment_recipe="torchvision-ta")

    @unittest.skipUnless(HAVE_TV or REQUIRE, "no torchvision")
    def test_geometry_and_blur(self):
        # RandomAffine, RandomRotation and GaussianBlur map onto their flags
        # with torchvision's meanings; they change the pixels, and the
        # epoch decides the draws.
        from torchvision import transforms as T
        B = T.InterpolationMode.BILINEAR
        tf = T.Compose([T.RandomResizedCrop(32), T.RandomHorizontalFlip(),
                        T.RandomAffine(10, translate=(0.1, 0.2), scale=(0.9, 1.1), shear=(1, 2, 3, 4), interpolation=B,
                                       fill=5),
                        T.RandomRotation((-20, 30), interpolation=B, fill=5), T.RandomGrayscale(0.2),
                        T.GaussianBlur((5, 3), sigma=(0.5, 1.5)), T.ToTensor(), T.Normalize(*IMAGENET)])
        ops = from_torchvision(tf)
        self.assertEqual(ops[2], {"op": "RandomAffine", "degrees": [-10.0, 10.0], "translate": [0.1, 0.2],
                                  "scale": [0.9, 1.1], "shear": [1.0, 2.0, 3.0, 4.0], "interpolation": "bilinear",
                                  "fill": 5})
        self.assertEqual(ops[3], {"op": "RandomRotation", "degrees": [-20.0, 30.0], "interpolation": "bilinear",
                                  "expand": False, "fill": 5})
        self.assertEqual(ops[5], {"op": "GaussianBlur", "kernel_size": [5, 3], "sigma": [0.5, 1.5]})
        # torchvision's defaults: fill 0, NEAREST, sigma (0.1, 2.0).
        ops = from_torchvision(T.Compose([T.RandomResizedCrop(32), T.RandomRotation(15), T.GaussianBlur(3),
                                          T.ToTensor()]))
        self.assertEqual((ops[1]["fill"], ops[1]["interpolation"]), (0, "nearest"))
        self.assertEqual(ops[2]["sigma"], [0.1, 2.0])
        plain = self.epochs(transform=T.Compose([T.RandomResizedCrop(32), T.RandomHorizontalFlip(), T.ToTensor(),
                                                 T.Normalize(*IMAGENET)]))[0]
        e0, e1 = self.epochs(2, transform=tf)
        self.assertNotEqual(e0, plain)
        self.assertNotEqual(e0, e1)
        self.assertEqual(self.epochs(transform=tf, epoch=1)[0], e1, "a fresh loader at epoch=1")


if __name__ == "__main__":
    unittest.main()
