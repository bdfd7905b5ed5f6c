"""Datasets where they lie (issue 39 items 1 and 6): faster.Loader opens
torchvision's layouts with torchvision's classes, labels and order.

Run by serve.TestPythonLayouts, which builds the binary (FASTER_BIN)."""
import os
import pickle
import shutil
import tempfile
import unittest

import numpy as np

import faster

try:
    import torchvision.datasets as D
    import torchvision.datasets.cifar as tv_cifar
    from PIL import Image
except ImportError:  # pragma: no cover - the Go test requires them
    D = None

REQUIRE = os.environ.get("FASTER_REQUIRE_DATA") == "1"


def write_cifar10(root, rng):
    d = os.path.join(root, "cifar-10-batches-py")
    os.makedirs(d)

    def dump(name, obj):
        with open(os.path.join(d, name), "wb") as f:
            pickle.dump(obj, f, protocol=2)  # as the published batches

    dump("batches.meta", {"num_cases_per_batch": 10, "num_vis": 3072,
                          "label_names": ["airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse",
                                          "ship", "truck"]})
    for name, n in [("data_batch_%d" % i, 6 + i) for i in range(1, 6)] + [("test_batch", 13)]:
        dump(name, {"batch_label": name, "labels": [int(x) for x in rng.integers(0, 10, n)],
                    "data": rng.integers(0, 256, (n, 3072), dtype=np.uint8),
                    "filenames": ["%s_%d.png" % (name, i) for i in range(n)]})


def write_imagenet(root, rng):
    """torchvision's ImageNet layout: root/train and root/val of class
    folders, the raw tars beside them."""
    for split, per in (("train", 3), ("val", 2)):
        for c in ("n01440764", "n01443537", "n01484850"):
            os.makedirs(os.path.join(root, split, c))
            for i in range(per):
                px = rng.integers(0, 256, (24 + i, 30, 3), dtype=np.uint8)
                Image.fromarray(px).save(os.path.join(root, split, c, "%s_%d.JPEG" % (c, i)), quality=95)
    for name in ("ILSVRC2012_img_val.tar", "ILSVRC2012_devkit_t12.tar.gz"):
        with open(os.path.join(root, name), "wb") as f:
            f.write(b"raw download, not data " * 40)


@unittest.skipUnless(os.environ.get("FASTER_BIN"), "FASTER_BIN not set: run through `go test ./serve`")
class LayoutsTest(unittest.TestCase):
    def setUp(self):
        if D is None:
            if REQUIRE:
                self.fail("torchvision and PIL required")
            self.skipTest("no torchvision")
        self.tmp = tempfile.mkdtemp()
        self.rng = np.random.default_rng(3)

    def tearDown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)

    def serve(self, root, **kw):
        args = dict(batch_size=4, transform="eval", resolution=32, layout="u8-hwc", num_workers=1, output="numpy")
        args.update(kw)
        labels, keys = [], []
        self.shape = None
        with faster.Loader(root, **args) as l:
            classes = list(l.dataset.classes)
            self.samples = l.dataset.samples if l.hello.get("kind") == "imagefolder" else None
            for b in l.batches():
                labels += [int(x) for x in b.labels]
                keys += list(b.keys)
                self.shape = tuple(b.images.shape)
        return classes, labels, keys

    def test_cifar10_batches(self):
        write_cifar10(self.tmp, self.rng)
        tv_cifar.check_integrity = lambda *a, **k: True  # the files are written here, not the published ones
        for train, split in ((True, "train"), (False, "test")):
            tv = D.CIFAR10(self.tmp, train=train, download=False)
            classes, labels, keys = self.serve(self.tmp, split=split)
            self.assertEqual(classes, tv.classes)
            self.assertEqual(labels, list(tv.targets), split)
        with self.assertRaisesRegex(Exception, "train and test"):
            self.serve(self.tmp, split="val")

    def test_imagenet_split_folders(self):
        write_imagenet(self.tmp, self.rng)
        for split in ("train", "val"):
            tv = D.ImageFolder(os.path.join(self.tmp, split))
            classes, labels, keys = self.serve(self.tmp, split=split)
            self.assertEqual(classes, tv.classes)
            self.assertEqual(labels, [l for _, l in tv.samples], split)
            self.assertEqual(keys, [os.path.relpath(p, os.path.join(self.tmp, split)) for p, _ in tv.samples])
            # dataset.samples lists root/<split>'s files, as ImageFolder(root/<split>).samples (before:
            # root/<class> walked, nothing there: "lists 0 images here and 9 in the server").
            self.assertEqual(self.samples, tv.samples, split)
        with self.assertRaisesRegex(Exception, "train, val"):
            self.serve(self.tmp, split="nonexistent")

    def test_fashion_mnist_idx(self):
        src = "/usr/share/datasets/fashion-mnist"
        if not os.path.exists(os.path.join(src, "t10k-images-idx3-ubyte.gz")):
            if REQUIRE:
                self.fail("%s missing" % src)
            self.skipTest("no Fashion-MNIST")
        raw = os.path.join(self.tmp, "FashionMNIST", "raw")
        os.makedirs(raw)
        import gzip
        for name in ("train-images-idx3-ubyte", "train-labels-idx1-ubyte", "t10k-images-idx3-ubyte",
                     "t10k-labels-idx1-ubyte"):
            with gzip.open(os.path.join(src, name + ".gz")) as f, open(os.path.join(raw, name), "wb") as g:
                g.write(f.read())
        tv = D.FashionMNIST(self.tmp, train=False, download=False)
        classes, labels, _ = self.serve(src, split="test", batch_size=500, resolution=28)
        self.assertEqual(classes, tv.classes)
        self.assertEqual(labels, [int(x) for x in tv.targets])
        # One channel, as torchvision's MNIST gives (1×28×28 tensors): the
        # dataset says so (source.Channeler), the loader serves it.
        self.assertEqual(self.shape[1:], (28, 28, 1), "u8-hwc batches of Fashion-MNIST")


if __name__ == "__main__":
    unittest.main()
