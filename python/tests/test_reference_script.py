"""examples/reference_train.py, in the shape of torchvision 0.14's
classification reference (ImageFolder of root/train and root/val, the
presets' objects holding a Compose in .transforms, RASampler with
--ra-sampler, DistributedSampler / RandomSampler / SequentialSampler), run
with DataLoader and with faster.Loader given the same dataset objects and
samplers: the epoch must hold what the sampler says (RASampler: 128 samples
per rank of 400 images on 2 ranks, with repeats — before, faster.Loader
dropped the sampler and served 200), and evaluation before training the
same sums (the eval pixels are torchvision's by default).

Run by serve.TestPython (FASTER_BIN set). Needs torch and torchvision."""
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
SCRIPT = os.path.join(ROOT, "examples", "reference_train.py")
REQUIRE = os.environ.get("FASTER_REQUIRE_DATA") == "1"
# The evaluation loss of the same weights: PIL's pixels with libjpeg-turbo
# (3 places: float sums in another order); the pure-Go decoder of a
# CGO_ENABLED=0 build is a few levels from libjpeg's (measured 0.0009 on a
# loss sum of 49.5), so 1 place there. Accuracy counts are equal on both.
LOSS_PLACES = 1 if os.environ.get("FASTER_JPEG_BACKEND") == "pure-go" else 3
PHOTOS = "/usr/share/backgrounds/mate"


def have(mod):
    import importlib.util
    return importlib.util.find_spec(mod) is not None


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@unittest.skipUnless(os.environ.get("FASTER_BIN"), "FASTER_BIN not set: run through `go test ./serve`")
class ReferenceScriptTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        missing = [m for m in ("torch", "torchvision", "PIL") if not have(m)]
        if not os.path.isdir(PHOTOS):
            missing.append(PHOTOS)
        if missing:
            if REQUIRE:
                raise AssertionError("missing %s under FASTER_REQUIRE_DATA=1 (scripts/setup.sh)" % missing)
            raise unittest.SkipTest("missing %s" % missing)
        cls.tmp = tempfile.mkdtemp(prefix="faster-reference-")
        mk = os.path.join(ROOT, "bench", "imagefolder.py")
        # torchvision's ImageNet layout: root/train and root/val, 400
        # training images (RASampler keeps a multiple of 256) in 4 classes.
        subprocess.check_call([sys.executable, mk, os.path.join(cls.tmp, "train"), "4", "100"], stdout=subprocess.DEVNULL)
        subprocess.check_call([sys.executable, mk, os.path.join(cls.tmp, "val"), "4", "9"], stdout=subprocess.DEVNULL)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def run_script(self, loader, world, *args):
        d = tempfile.mkdtemp(dir=self.tmp)
        result = os.path.join(d, "result.json")
        port = free_port()
        procs = []
        for rank in range(world):
            env = dict(os.environ, RANK=str(rank), WORLD_SIZE=str(world), MASTER_ADDR="127.0.0.1",
                       MASTER_PORT=str(port), OMP_NUM_THREADS="1", PYTHONPATH=os.path.join(ROOT, "python"),
                       PYTHONFAULTHANDLER="1")
            cmd = [sys.executable, SCRIPT, "--data-path", self.tmp, "--loader", loader, "--result", result] + list(args)
            procs.append(subprocess.Popen(cmd, cwd=d, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT))
        for p in procs:
            try:
                out, _ = p.communicate(timeout=300)
            except subprocess.TimeoutExpired:
                for q in procs:
                    q.send_signal(signal.SIGABRT)
                    try:
                        q.wait(timeout=10)
                    except subprocess.TimeoutExpired:
                        q.kill()
                self.fail("%s W=%d %s: a rank hung" % (loader, world, args))
            self.assertEqual(p.returncode, 0, "%s W=%d %s:\n%s" % (loader, world, args, out.decode()[-3000:]))
        with open(result) as f:
            return json.load(f)

    def test_ra_sampler_two_ranks(self):
        t = self.run_script("torch", 2, "--ra-sampler")
        f = self.run_script("faster", 2, "--ra-sampler")
        self.assertEqual(t["epochs"][0]["samples_per_rank"], [128, 128])
        self.assertEqual(f["epochs"][0]["samples_per_rank"], t["epochs"][0]["samples_per_rank"])
        self.assertEqual((f["train_len"], f["test_len"]), (t["train_len"], t["test_len"]))
        # Evaluation of the same initial weights: the same sums.
        self.assertEqual(f["tests"][0][1:], t["tests"][0][1:])
        self.assertAlmostEqual(f["tests"][0][0], t["tests"][0][0], places=LOSS_PLACES)

    def test_one_process(self):
        t = self.run_script("torch", 1, "--epochs", "1")
        f = self.run_script("faster", 1, "--epochs", "1")
        self.assertEqual(f["epochs"][0]["samples_per_rank"], [400])
        self.assertEqual(f["epochs"][0]["label_sum"], t["epochs"][0]["label_sum"])
        self.assertEqual((f["train_len"], f["test_len"]), (t["train_len"], t["test_len"]))
        self.assertEqual(f["tests"][0][1:], t["tests"][0][1:])
        self.assertAlmostEqual(f["tests"][0][0], t["tests"][0][0], places=LOSS_PLACES)


if __name__ == "__main__":
    unittest.main()
