"""Issue 27 item 5: the augmentations reachable three ways with one
meaning. A torchvision Compose handed to faster.Loader, the named recipe
(augment_recipe=, `faster serve --augment-recipe`) and the flags the
Compose maps onto give the same batches, bit for bit (the Go test
cmd/faster TestAugmentRecipeEqualsFlags holds each recipe to its flags);
what does not map is refused by name."""
import importlib.util
import os
import shutil
import tempfile
import unittest

import numpy as np

import faster
from faster.transforms import UnsupportedTransform, from_torchvision

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
        import torch
        from torchvision import transforms as T
        B, N = T.InterpolationMode.BILINEAR, T.InterpolationMode.NEAREST
        tf = T.Compose([T.RandomResizedCrop(32), T.RandomHorizontalFlip(),
                        T.RandAugment(num_ops=3, magnitude=5, num_magnitude_bins=11, interpolation=B, fill=[1, 2, 3]),
                        T.ColorJitter(brightness=0.4, contrast=(0.5, 1.5), hue=0.1), T.RandomGrayscale(0.2),
                        T.PILToTensor(), T.ConvertImageDtype(torch.float), T.Normalize(*IMAGENET),
                        T.RandomErasing(p=0.25, scale=(0.1, 0.2), ratio=(0.5, 2.0), value=(0.5, 0.0, -0.5))])
        a = from_torchvision(tf)["args"]
        for flag, want in (("--auto-augment", "ra"), ("--ra-n", "3"), ("--ra-m", "5"), ("--magnitude-bins", "11"),
                           ("--augment-interpolation", "bilinear"), ("--augment-fill", "1.0,2.0,3.0"),
                           ("--color-jitter", "0.6,1.4,0.5,1.5,0.0,0.0,-0.1,0.1"), ("--grayscale-prob", "0.2"),
                           ("--erasing-prob", "0.25"), ("--erasing-scale", "0.1,0.2"), ("--erasing-ratio", "0.5,2.0"),
                           ("--erasing-value", "0.5,0.0,-0.5")):
            self.assertEqual(a[a.index(flag) + 1], want, flag)
        with faster.Loader(self.root, batch_size=3, transform=tf, output="numpy", rank=0, world_size=1, workers=1) as l:
            self.assertEqual(np.asarray(next(l.batches()).images).shape, (3, 3, 32, 32))
        a = from_torchvision(T.Compose([T.RandomResizedCrop(32), T.TrivialAugmentWide(interpolation=N, fill=7),
                                        T.ToTensor()]))["args"]
        self.assertEqual(a[a.index("--augment-interpolation") + 1], "nearest")
        self.assertEqual(a[a.index("--augment-fill") + 1], "7.0")
        crop = T.RandomResizedCrop(32)
        for bad, word in (
                ([crop, T.RandomPerspective(), T.ToTensor()], "RandomPerspective"),
                ([crop, T.GaussianBlur(3), T.ColorJitter(0.4), T.ToTensor()], "ColorJitter"),
                ([crop, T.RandomRotation(10), T.RandomAffine(5), T.ToTensor()], "RandomAffine"),
                ([crop, T.RandomRotation(10, expand=True), T.ToTensor()], "expand"),
                ([crop, T.RandomRotation(10, center=(1, 1)), T.ToTensor()], "center"),
                ([crop, T.RandomAffine(5, interpolation=B), T.RandomRotation(10), T.ToTensor()], "interpolation"),
                ([crop, T.TrivialAugmentWide(), T.RandomRotation(10, fill=9), T.ToTensor()], "fill"),
                ([crop, T.ColorJitter(0.4), T.TrivialAugmentWide(), T.ToTensor()], "TrivialAugmentWide"),
                ([crop, T.TrivialAugmentWide(interpolation=T.InterpolationMode.BICUBIC), T.ToTensor()], "bicubic"),
                ([crop, T.AutoAugment(T.AutoAugmentPolicy.CIFAR10), T.ToTensor()], "cifar10"),
                ([crop, T.AugMix(mixture_width=2), T.ToTensor()], "mixture_width"),
                ([crop, T.RandAugment(magnitude=31), T.ToTensor()], "magnitude"),
                ([T.Resize(36), T.CenterCrop(32), T.ToTensor(), T.RandomErasing()], "RandomErasing"),
                ([crop, T.ToTensor(), T.RandomErasing(), T.Normalize(*IMAGENET)], "Normalize")):
            with self.assertRaises(UnsupportedTransform) as cm:
                from_torchvision(T.Compose(bad))
            self.assertIn(word.lower(), str(cm.exception).lower())
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
        a = from_torchvision(tf)["args"]
        for flag, want in (("--augment-interpolation", "bilinear"), ("--augment-fill", "5.0,5.0,5.0"),
                           ("--affine-degrees", "-10.0,10.0"), ("--affine-translate", "0.1,0.2"),
                           ("--affine-scale", "0.9,1.1"), ("--affine-shear", "1.0,2.0,3.0,4.0"),
                           ("--rotate-degrees", "-20.0,30.0"), ("--grayscale-prob", "0.2"),
                           ("--blur-kernel", "5,3"), ("--blur-sigma", "0.5,1.5")):
            self.assertEqual(a[a.index(flag) + 1], want, flag)
        # torchvision's defaults: fill 0, NEAREST, sigma (0.1, 2.0); no
        # --augment-fill (0 is the default of these warps).
        a = from_torchvision(T.Compose([T.RandomResizedCrop(32), T.RandomRotation(15), T.GaussianBlur(3),
                                        T.ToTensor()]))["args"]
        self.assertNotIn("--augment-fill", a)
        self.assertEqual(a[a.index("--augment-interpolation") + 1], "nearest")
        self.assertEqual(a[a.index("--blur-sigma") + 1], "0.1,2.0")
        plain = self.epochs(transform=T.Compose([T.RandomResizedCrop(32), T.RandomHorizontalFlip(), T.ToTensor(),
                                                 T.Normalize(*IMAGENET)]))[0]
        e0, e1 = self.epochs(2, transform=tf)
        self.assertNotEqual(e0, plain)
        self.assertNotEqual(e0, e1)
        self.assertEqual(self.epochs(transform=tf, epoch=1)[0], e1, "a fresh loader at epoch=1")


if __name__ == "__main__":
    unittest.main()
