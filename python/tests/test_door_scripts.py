"""The issue-39 door: a user's script with only its loader lines changed.

examples/mnist_main.py (pytorch/examples' mnist/main.py: torchvision's
FashionMNIST objects, ToTensor + one-channel Normalize, DataLoader with its
defaults) and examples/cifar_main.py (the popular pytorch-cifar main.py:
CIFAR10 objects, RandomCrop(32, padding=4), shuffle=True) run with
DataLoader and with faster.Loader given the same dataset objects, on data
where torchvision keeps it: Debian's Fashion-MNIST gunzipped into
ROOT/FashionMNIST/raw, and CIFAR-10 python batches written in the layout the
CIFAR page documents (pickled dicts of uint8 rows) from real photographs.
The two versions must see the same data: the same test metrics from the same
initial weights, the same shapes, the same labels in the same order where
the script does not shuffle.

Run by serve.TestPython (FASTER_BIN set). Needs torch, torchvision, PIL."""
import gzip
import json
import os
import pickle
import random
import shutil
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
REQUIRE = os.environ.get("FASTER_REQUIRE_DATA") == "1"
PHOTOS = "/usr/share/backgrounds/mate"
FASHION = "/usr/share/datasets/fashion-mnist"


def have(mod):
    import importlib.util
    return importlib.util.find_spec(mod) is not None


def photos():
    out = []
    for d, _, fs in os.walk(PHOTOS):
        out += [os.path.join(d, f) for f in sorted(fs) if f.lower().endswith((".jpg", ".jpeg", ".png"))]
    return sorted(out)


class _Py2Pickler(pickle._Pickler):
    """Pickles bytes as Python 2's str (SHORT_BINSTRING / BINSTRING), as the
    CIFAR files were written (by Python 2's cPickle, protocol 2): keys and
    the array's raw data read back as str under encoding="latin1", which is
    how torchvision loads them."""
    dispatch = dict(pickle._Pickler.dispatch)

    def _save_py2_str(self, obj):
        n = len(obj)
        if n < 256:
            self.write(pickle.SHORT_BINSTRING + bytes([n]) + obj)
        else:
            self.write(pickle.BINSTRING + n.to_bytes(4, "little") + obj)
        self.memoize(obj)

    dispatch[bytes] = _save_py2_str


def write_cifar(root, train_per_batch, test_n):
    """cifar-10-batches-py under root, as the CIFAR page lays it out:
    data_batch_1..5 and test_batch, each a pickled dict with b"data" (N x
    3072 uint8, R then G then B planes of 32x32, row-major) and b"labels";
    batches.meta with b"label_names". Pixels are 32x32 crops of photographs."""
    import numpy as np
    from PIL import Image
    rng = random.Random(7)
    srcs = [Image.open(p).convert("RGB") for p in photos()[:6]]

    def sample():
        im = rng.choice(srcs)
        s = rng.randint(64, min(im.size) // 2)
        x, y = rng.randint(0, im.size[0] - s), rng.randint(0, im.size[1] - s)
        a = np.asarray(im.crop((x, y, x + s, y + s)).resize((32, 32), Image.BILINEAR), dtype=np.uint8)
        return a.transpose(2, 0, 1).reshape(-1)

    base = os.path.join(root, "cifar-10-batches-py")
    os.makedirs(base)

    def batch(name, n):
        data = np.stack([sample() for _ in range(n)])
        labels = [rng.randrange(10) for _ in range(n)]
        with open(os.path.join(base, name), "wb") as f:
            _Py2Pickler(f, protocol=2).dump({b"batch_label": name.encode(), b"labels": labels, b"data": data,
                                            b"filenames": [b"img%d.png" % i for i in range(n)]})

    for i in range(1, 6):
        batch("data_batch_%d" % i, train_per_batch)
    batch("test_batch", test_n)
    names = ["airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse", "ship", "truck"]
    with open(os.path.join(base, "batches.meta"), "wb") as f:
        _Py2Pickler(f, protocol=2).dump({b"label_names": [n.encode() for n in names],
                                        b"num_cases_per_batch": train_per_batch, b"num_vis": 3072})


def write_fashion(root, keep_train, keep_test):
    """ROOT/FashionMNIST/raw with the IDX files torchvision reads (gunzipped),
    cut to the first images (the header's count rewritten)."""
    raw = os.path.join(root, "FashionMNIST", "raw")
    os.makedirs(raw)
    for stem, keep in (("train", keep_train), ("t10k", keep_test)):
        for kind, item in (("images-idx3-ubyte", 28 * 28), ("labels-idx1-ubyte", 1)):
            with gzip.open(os.path.join(FASHION, "%s-%s.gz" % (stem, kind))) as f:
                b = f.read()
            head = 16 if kind.startswith("images") else 8
            b = b[:4] + keep.to_bytes(4, "big") + b[8:head] + b[head:head + keep * item]
            with open(os.path.join(raw, "%s-%s" % (stem, kind)), "wb") as f:
                f.write(b)


@unittest.skipUnless(os.environ.get("FASTER_BIN"), "FASTER_BIN not set: run through `go test ./serve`")
class DoorScriptsTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        missing = [m for m in ("torch", "torchvision", "PIL", "numpy") if not have(m)]
        missing += [p for p in (PHOTOS, FASHION) if not os.path.isdir(p)]
        if missing:
            if REQUIRE:
                raise AssertionError("missing %s under FASTER_REQUIRE_DATA=1 (scripts/setup.sh)" % missing)
            raise unittest.SkipTest("missing %s" % missing)
        cls.tmp = tempfile.mkdtemp(prefix="faster-door-")
        write_fashion(cls.tmp, 1000, 300)
        write_cifar(cls.tmp, 41, 37)
        # torchvision's CIFAR10 checks its files' MD5s against the official
        # archive's; these files are written here, so the scripts run with
        # that one check passed (sitecustomize, both loaders alike).
        cls.site = os.path.join(cls.tmp, "site")
        os.makedirs(cls.site)
        with open(os.path.join(cls.site, "sitecustomize.py"), "w") as f:
            f.write("import torchvision.datasets.cifar as c\nc.check_integrity = lambda *a, **k: True\n")

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def run_script(self, script, loader, *args):
        out = os.path.join(self.tmp, "%s-%s.json" % (os.path.basename(script), loader))
        env = dict(os.environ, PYTHONPATH=os.pathsep.join([os.path.join(ROOT, "python"), self.site]))
        p = subprocess.run([sys.executable, os.path.join(ROOT, "examples", script), "--data", self.tmp,
                            "--loader", loader, "--result", out] + list(args),
                           env=env, capture_output=True, text=True, timeout=600)
        self.assertEqual(p.returncode, 0, "%s --loader %s failed:\n%s" % (script, loader, p.stderr[-3000:]))
        with open(out) as f:
            return json.load(f)

    def test_mnist_script(self):
        args = ("--dataset", "fashion", "--epochs", "1", "--max-steps", "4", "--evaluate-first",
                "--test-batch-size", "128")
        torch_r = self.run_script("mnist_main.py", "torch", *args)
        faster_r = self.run_script("mnist_main.py", "faster", *args)
        # DataLoader's defaults (no shuffle): the same batches in the same
        # order, one channel, and so the same losses step by step.
        self.assertEqual([s["shape"] for s in faster_r["trace"]], [s["shape"] for s in torch_r["trace"]])
        self.assertEqual(faster_r["trace"][0]["shape"], [64, 1, 28, 28])
        self.assertEqual([s["labels"] for s in faster_r["trace"]], [s["labels"] for s in torch_r["trace"]])
        for a, b in zip(faster_r["trace"], torch_r["trace"]):
            self.assertAlmostEqual(a["loss"], b["loss"], places=4)
        for a, b in zip(faster_r["tests"], torch_r["tests"]):
            self.assertEqual((a["seen"], a["correct"]), (b["seen"], b["correct"]))
            self.assertAlmostEqual(a["loss_sum"] / a["seen"], b["loss_sum"] / b["seen"], places=4)

    def test_cifar_script(self):
        args = ("--epochs", "2", "--evaluate-first")
        torch_r = self.run_script("cifar_main.py", "torch", *args)
        faster_r = self.run_script("cifar_main.py", "faster", *args)
        # Before training: the same weights on the same test images.
        a, b = faster_r["tests"][0], torch_r["tests"][0]
        self.assertEqual((a["seen"], a["correct"]), (b["seen"], b["correct"]))
        self.assertAlmostEqual(a["loss_sum"], b["loss_sum"], places=3)
        # Training: shuffled and augmented, so compare what every epoch
        # holds: the batch shapes and each epoch's labels as a multiset.
        self.assertEqual([s["shape"] for s in faster_r["trace"]], [s["shape"] for s in torch_r["trace"]])
        for e in range(2):
            fl = sorted(l for s in faster_r["trace"] if s["epoch"] == e for l in s["labels"])
            tl = sorted(l for s in torch_r["trace"] if s["epoch"] == e for l in s["labels"])
            self.assertEqual(fl, tl)
        e0 = [l for s in faster_r["trace"] if s["epoch"] == 0 for l in s["labels"]]
        e1 = [l for s in faster_r["trace"] if s["epoch"] == 1 for l in s["labels"]]
        self.assertNotEqual(e0, e1, "shuffle=True reshuffles every epoch")


if __name__ == "__main__":
    unittest.main()
