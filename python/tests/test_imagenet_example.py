"""examples/imagenet_main.py, a pytorch/examples-style ImageNet script, run
with torchvision's DataLoader and with faster.Loader on the same ImageFolder
trees of real photographs (bench/imagefolder.py: crops of Debian's
mate-backgrounds): the two versions must train on the same thing.

Run by serve.TestPython (FASTER_BIN set). Needs torch and torchvision."""
import collections
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
SCRIPT = os.path.join(ROOT, "examples", "imagenet_main.py")
REQUIRE = os.environ.get("FASTER_REQUIRE_DATA") == "1"
PHOTOS = "/usr/share/backgrounds/mate"


def have(mod):
    import importlib.util
    return importlib.util.find_spec(mod) is not None


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@unittest.skipUnless(os.environ.get("FASTER_BIN"), "FASTER_BIN not set: run through `go test ./serve`")
class ImageNetExampleTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        missing = [m for m in ("torch", "torchvision", "PIL") if not have(m)]
        if not os.path.isdir(PHOTOS):
            missing.append(PHOTOS)
        if missing:
            if REQUIRE:
                raise AssertionError("missing %s under FASTER_REQUIRE_DATA=1 (scripts/setup.sh)" % missing)
            raise unittest.SkipTest("missing %s" % missing)
        cls.tmp = tempfile.TemporaryDirectory()
        mk = os.path.join(ROOT, "bench", "imagefolder.py")
        # 65 training images (odd: two ranks differ by one) and 35
        # validation images (not divisible by 2, 3 or 4).
        cls.train = subprocess.check_output([sys.executable, mk, os.path.join(cls.tmp.name, "train"), "5", "13"]).decode().strip()
        cls.val = subprocess.check_output([sys.executable, mk, os.path.join(cls.tmp.name, "val"), "5", "7"]).decode().strip()
        cls.all_train = sorted(os.path.relpath(os.path.join(d, f), cls.train)
                               for d, _, fs in os.walk(cls.train) for f in fs if f.endswith(".JPEG"))

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def run_script(self, loader, world, *args, expect_rc=0, name=None):
        """Runs the script in world processes (env:// rendezvous, as
        torchrun sets it up); returns the result JSON and the traces by rank."""
        d = tempfile.mkdtemp(dir=self.tmp.name)
        result, trace = os.path.join(d, "result.json"), os.path.join(d, "trace")
        port = free_port()
        procs = []
        for rank in range(world):
            env = dict(os.environ, RANK=str(rank), WORLD_SIZE=str(world), MASTER_ADDR="127.0.0.1",
                       MASTER_PORT=str(port), OMP_NUM_THREADS="1", PYTHONPATH=os.path.join(ROOT, "python"),
                       PYTHONFAULTHANDLER="1")
            cmd = [sys.executable, SCRIPT, "--train", self.train, "--val", self.val, "--loader", loader,
                   "--batch-size", "8", "--resolution", "48", "--workers", "0", "--seed", "3",
                   "--result", result, "--trace", trace] + list(args)
            procs.append(subprocess.Popen(cmd, cwd=name or d, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT))
        outs = []
        for p in procs:
            try:
                o, _ = p.communicate(timeout=240)
            except subprocess.TimeoutExpired:
                for q in procs:
                    q.send_signal(signal.SIGABRT)  # faulthandler prints where each rank waits
                    try:
                        q.wait(timeout=10)
                    except subprocess.TimeoutExpired:
                        q.kill()
                tails = [q.communicate()[0].decode()[-1500:] for q in procs]
                self.fail("%s W=%d %s: a rank hung; the ranks' output:\n%s" % (loader, world, args, "\n---\n".join(tails)))
            outs.append(o.decode())
            self.assertEqual(p.returncode, expect_rc, "%s W=%d %s:\n%s" % (loader, world, args, o.decode()[-3000:]))
        res = None
        if os.path.exists(result):
            with open(result) as f:
                res = json.load(f)
        traces = []
        for rank in range(world):
            steps = []
            path = "%s.rank%d" % (trace, rank)
            if os.path.exists(path):
                with open(path) as f:
                    steps = [json.loads(line) for line in f]
            traces.append(steps)
        return res, traces, d

    def test_exact_distributed_evaluation(self):
        # (--workers 0 throughout: DataLoader worker processes forked from a
        # process holding gloo's threads can deadlock at exit, which is the
        # peer's trouble, not the loaders'.)
        # The same untrained model (seeded) evaluated by 1-4 processes: every
        # image once, the same Acc@1 whatever the world size, and the same
        # with both loaders (the eval pixels are torchvision's).
        accs = {}
        for loader in ("faster", "torch"):
            for world in (1, 2, 3, 4):
                res, _, _ = self.run_script(loader, world, "--evaluate")
                self.assertEqual(res["count"], 35, (loader, world))
                accs[(loader, world)] = round(res["acc1"], 6)
        for loader in ("faster", "torch"):
            self.assertEqual(len({accs[(loader, w)] for w in (1, 2, 3, 4)}), 1, accs)
        if os.environ.get("FASTER_JPEG_BACKEND") != "pure-go":
            # libjpeg-turbo decodes as PIL does: the same pixels, the same Acc.
            self.assertEqual(accs[("faster", 1)], accs[("torch", 1)], accs)

    def test_one_process_two_epochs(self):
        # Without set_epoch (one process never calls it): each epoch serves
        # every sample once, in a new order; classes, len(loader) and
        # len(loader.dataset) as DataLoader's; per-epoch label multisets
        # equal to DataLoader's.
        f, ftr, _ = self.run_script("faster", 1, "--epochs", "2")
        t, ttr, _ = self.run_script("torch", 1, "--epochs", "2")
        for k in ("classes", "train_len", "train_dataset_len"):
            self.assertEqual(f[k], t[k], k)
        self.assertEqual((f["train_len"], f["train_dataset_len"]), (9, 65))
        orders = []
        for epoch in (0, 1):
            keys = [k for s in ftr[0] if s["epoch"] == epoch for k in s["keys"]]
            self.assertEqual(sorted(keys), self.all_train, "epoch %d" % epoch)
            orders.append(keys)
            labels = lambda tr: collections.Counter(l for s in tr[0] if s["epoch"] == epoch for l in s["labels"])
            self.assertEqual(labels(ftr), labels(ttr), "epoch %d label multiset" % epoch)
        self.assertNotEqual(orders[0], orders[1], "the second epoch repeated the first's order")

    def test_two_ranks_and_resume(self):
        # Two ranks, one epoch: every sample once plus DistributedSampler's
        # one repeat, and the same steps and label multiset as DataLoader's.
        full, ftr, _ = self.run_script("faster", 2, "--epochs", "1")
        _, ttr, _ = self.run_script("torch", 2, "--epochs", "1")
        self.assertEqual([len(r) for r in ftr], [len(r) for r in ttr])
        served = [k for r in ftr for s in r for k in s["keys"]]
        self.assertEqual(len(served), 66)
        self.assertEqual(sorted(set(served)), self.all_train)
        count = lambda tr: sum(len(s["labels"]) for r in tr for s in r)
        self.assertEqual(count(ftr), count(ttr))

        # Killed after step 3, checkpointed (rank 0 only, as pytorch/examples
        # does) at step 2: resumed with 2 ranks it serves exactly what the
        # uninterrupted run served from step 3 on, and with 1 rank exactly
        # the rest of the epoch.
        _, before, d = self.run_script("faster", 2, "--epochs", "1", "--save-every", "2", "--stop-after", "3", expect_rc=17)
        ckpt = os.path.join(d, "checkpoint.pth.tar")
        self.assertTrue(os.path.exists(ckpt))
        for r in range(2):
            self.assertEqual([s["keys"] for s in before[r]], [s["keys"] for s in ftr[r][:3]], "rank %d before the kill" % r)
        _, after, _ = self.run_script("faster", 2, "--epochs", "1", "--resume", ckpt)
        for r in range(2):
            self.assertEqual([k for s in after[r] for k in s["keys"]],
                             [k for s in ftr[r][2:] for k in s["keys"]], "rank %d after the resume" % r)
        _, after1, _ = self.run_script("faster", 1, "--epochs", "1", "--resume", ckpt)
        first2 = [k for r in range(2) for s in before[r][:2] for k in s["keys"]]
        rest = [k for s in after1[0] for k in s["keys"]]
        self.assertEqual(sorted(first2 + rest), self.all_train, "2 ranks' first 2 steps + 1 rank's rest")


if __name__ == "__main__":
    unittest.main()
