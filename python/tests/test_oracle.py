"""An independent oracle for faster.Loader's eval pixels: torchvision's own
Resize(256) + CenterCrop(224) + ToTensor + Normalize (PIL decode, PIL's
antialiased bilinear resize) on the same JPEGs, real photographs from
Debian's mate-backgrounds. Not digests from the Go loader: torchvision
computes the expectation itself.

Tolerance: the two pipelines decode with libjpeg-turbo (ours through cgo,
PIL's own build), resize with the same antialiased triangle filter (ours
in float32, PIL in fixed point with 8-bit intermediate rounding between
its horizontal and vertical passes), so pixels may differ by rounding: at
most 1/255 before normalisation on any value, and at most 0.05/255 on
average (measured here: identical); with the pure-Go decoder of a
CGO_ENABLED=0 build (Go's image/jpeg upsamples chroma without libjpeg's
smoothing, so colour edges differ), 10 levels at the 99th percentile and 1.0
on average (measured: 8 and 0.49). A wrong filter, crop offset, channel order, mean/std or
resolution gives errors of tens of levels.
"""
import glob
import importlib.util
import os
import shutil
import tempfile
import unittest

import numpy as np

import faster

REQUIRE = os.environ.get("FASTER_REQUIRE_DATA") == "1"
PHOTOS = sorted(glob.glob("/usr/share/backgrounds/mate/nature/*.jpg"))[:6]
HAVE_TV = importlib.util.find_spec("torchvision") is not None
# The server's JPEG decoder (serve.TestPython says which): libjpeg-turbo,
# as PIL's, or the pure-Go fallback of a CGO_ENABLED=0 build (Go's
# image/jpeg: another IDCT and chroma upsampling, a few levels apart on
# edges, within 0.5 levels on average here).
PURE_GO = os.environ.get("FASTER_JPEG_BACKEND") == "pure-go"
# Bounds: on the 99th percentile of each image's differences (a few
# edge pixels may differ more under the pure-Go decoder) and on the mean.
MAX_LEVELS, MEAN_LEVELS = (10.0, 1.0) if PURE_GO else (1.0, 0.05)


class TorchvisionOracle(unittest.TestCase):
    def setUp(self):
        if not HAVE_TV or len(PHOTOS) < 6:
            if REQUIRE:
                self.fail("torchvision (python3-torchvision) or mate-backgrounds missing and FASTER_REQUIRE_DATA=1")
            self.skipTest("torchvision or mate-backgrounds missing")
        from PIL import Image
        self.root = tempfile.mkdtemp(prefix="faster-oracle-")
        self.addCleanup(shutil.rmtree, self.root)
        for i, f in enumerate(PHOTOS):
            d = os.path.join(self.root, "class%d" % (i % 2))
            os.makedirs(d, exist_ok=True)
            im = Image.open(f).convert("RGB")
            # ImageNet's sizes, both orientations.
            im = im.resize((500, 375) if i % 3 else (375, 500), Image.BILINEAR)
            im.save(os.path.join(d, "p%d.JPEG" % i), "JPEG", quality=90)

    def test_eval_pixels_match_torchvision(self):
        import torch
        from PIL import Image
        from torchvision import transforms as T
        tf = T.Compose([T.Resize(256), T.CenterCrop(224), T.ToTensor(),
                        T.Normalize(mean=[0.485, 0.456, 0.406], std=[0.229, 0.224, 0.225])])
        std = np.array([0.229, 0.224, 0.225], dtype=np.float32).reshape(3, 1, 1)
        loader = faster.Loader(self.root, batch_size=4, transform="eval", resolution=224,
                               output="numpy", rank=0, world_size=1)
        seen = 0
        worst, total, count = 0.0, 0.0, 0
        try:
            for b in loader.batches():
                for row, key in enumerate(b.keys):
                    with Image.open(os.path.join(self.root, key)) as im:
                        want = tf(im.convert("RGB")).numpy()
                    got = np.asarray(b.images[row])
                    self.assertEqual(got.shape, (3, 224, 224), key)
                    diff = np.abs(got - want) * std * 255  # in 8-bit levels
                    high = float(np.percentile(diff, 99))
                    worst = max(worst, high)
                    total += float(diff.sum())
                    count += diff.size
                    if not PURE_GO:
                        self.assertLessEqual(float(diff.max()), 1.0, "%s: max difference %.2f levels" % (key, diff.max()))
                    self.assertLessEqual(high, MAX_LEVELS, "%s: 99th percentile of the differences %.2f levels (max %.2f)" % (key, high, diff.max()))
                    seen += 1
        finally:
            loader.close()
        self.assertEqual(seen, len(PHOTOS))
        self.assertLessEqual(total / count, MEAN_LEVELS, "mean difference %.3f levels" % (total / count))
        print("torchvision oracle (%s): %d photos, 99th percentile %.2f levels, mean %.3f levels" % ("pure-go" if PURE_GO else "libjpeg-turbo", seen, worst, total / count))

    def test_compose_handed_to_the_loader(self):
        # The user's own Compose, with parameters other than the study's
        # recipe (Resize 232 -> CenterCrop 200, another mean/std): the
        # loader maps it onto the Go pipeline and gives torchvision's pixels.
        from PIL import Image
        from torchvision import transforms as T
        mean, std = [0.5, 0.4, 0.3], [0.2, 0.25, 0.3]
        tf = T.Compose([T.Resize(232), T.CenterCrop(200), T.ToTensor(), T.Normalize(mean, std)])
        with faster.Loader(self.root, batch_size=3, transform=tf, output="numpy", rank=0, world_size=1) as loader:
            seen = 0
            total, count = 0.0, 0
            for b in loader.batches():
                for row, key in enumerate(b.keys):
                    with Image.open(os.path.join(self.root, key)) as im:
                        want = tf(im.convert("RGB")).numpy()
                    got = np.asarray(b.images[row])
                    self.assertEqual(got.shape, want.shape, key)
                    diff = np.abs(got - want) * np.array(std, dtype=np.float32).reshape(3, 1, 1) * 255
                    self.assertLessEqual(float(np.percentile(diff, 99)), MAX_LEVELS, key)
                    total += float(diff.sum())
                    count += diff.size
                    seen += 1
        self.assertEqual(seen, len(PHOTOS))
        self.assertLessEqual(total / count, MEAN_LEVELS)

    def test_compose_train_parameters_and_refusals(self):
        from torchvision import transforms as T
        from faster.transforms import from_torchvision
        tf = T.Compose([T.RandomResizedCrop(48, scale=(0.5, 1.0), ratio=(0.9, 1.1)), T.RandomHorizontalFlip(p=0.25),
                        T.ToTensor()])
        ops = from_torchvision(tf)
        # antialias: None in torchvision 0.14 (left out), True from 0.17.
        self.assertEqual([{k: v for k, v in o.items() if k != "antialias"} for o in ops],
                         [{"op": "RandomResizedCrop", "size": [48, 48], "scale": [0.5, 1.0], "ratio": [0.9, 1.1],
                           "interpolation": "bilinear"}, {"op": "RandomHorizontalFlip", "p": 0.25},
                          {"op": "ToTensor"}])
        with faster.Loader(self.root, batch_size=6, transform=tf, output="numpy", rank=0, world_size=1) as loader:
            b = next(loader.batches())
            self.assertEqual(np.asarray(b.images).shape, (6, 3, 48, 48))
            # ToTensor without Normalize: [0, 1].
            self.assertGreaterEqual(float(np.asarray(b.images).min()), 0.0)
            self.assertLessEqual(float(np.asarray(b.images).max()), 1.0)
        # Refused by the server before the first batch, naming the step.
        for bad, word in ((T.Compose([T.RandomResizedCrop(48), T.RandomPerspective(), T.ToTensor()]), "RandomPerspective"),
                          (T.Compose([T.RandomResizedCrop(48, interpolation=T.InterpolationMode.LANCZOS), T.ToTensor()]), "lanczos")):
            with self.assertRaisesRegex(ValueError, word):
                with faster.Loader(self.root, transform=bad, batch_size=2, output="numpy", rank=0, world_size=1) as loader:
                    next(loader.batches())


if __name__ == "__main__":
    unittest.main()
