"""Tests of the faster Python client against a real `faster serve`.

Run by the Go test serve.TestPython (so `go test ./...` and `make test` run
them), which builds the binary (FASTER_BIN), makes a small ImageFolder and
writes what the Go loader produces for each case (FASTER_TEST_EXPECT).
By hand: PYTHONPATH=python FASTER_BIN=... FASTER_TEST_EXPECT=... \
    /usr/bin/python3 -m unittest discover -s python/tests
"""
import glob
import hashlib
import importlib.util
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
import unittest

import numpy as np

import faster

EXPECT = os.environ.get("FASTER_TEST_EXPECT")
REQUIRE = os.environ.get("FASTER_REQUIRE_DATA") == "1"
HAVE_TORCH = importlib.util.find_spec("torch") is not None
SHM = "/dev/shm"


def need_torch(test):
    if HAVE_TORCH:
        return test
    if REQUIRE:
        def fail(self):
            self.fail("torch is not installed (python3-torch) and FASTER_REQUIRE_DATA=1")
        return fail
    return unittest.skip("torch is not installed")(test)


def digest(images, labels, keys):
    """As serve/loader_test.go's batchDigest: SHA-256 of the valid rows'
    pixels, the labels as little-endian int64s, the keys joined by NUL."""
    h = hashlib.sha256()
    h.update(np.ascontiguousarray(np.asarray(images)).tobytes())
    h.update(np.asarray(labels, dtype="<i8").tobytes())
    h.update("\0".join(keys).encode("utf-8", "surrogateescape"))
    return h.hexdigest()


def shm_files(pid):
    return glob.glob(os.path.join(SHM, "%s%d-*" % ("faster-serve-", pid)))


def gone(pid):
    """Whether process pid has exited (a zombie counts as exited)."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0] in ("Z", "X")
    except FileNotFoundError:
        return True


@unittest.skipUnless(EXPECT, "FASTER_TEST_EXPECT not set: run through `go test ./serve`")
class LoaderTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        with open(EXPECT) as f:
            e = json.load(f)
        cls.data = e["data"]
        cls.cases = {c["name"]: c for c in e["cases"]}

    def open(self, case, **kw):
        c = self.cases[case]
        args = dict(batch_size=c["batch"], transform=c["transform"], layout=c["layout"],
                    resolution=c["resolution"], seed=c["seed"], epoch=c["epoch"],
                    rank=c["rank"], world_size=c["world"], drop_last=c["drop"], workers=2)
        args.update(kw)
        return faster.Loader(c.get("data") or self.data, **args)

    def run_case(self, case, **kw):
        with self.open(case, **kw) as l:
            digests, keys = [], []
            for b in l.batches():
                digests.append(digest(b.images, b.labels, b.keys))
                keys += b.keys
            return digests, keys

    def test_bit_identical_numpy(self):
        for case in ("train-f32", "eval-u8", "rank1-drop"):
            with self.subTest(case=case):
                digests, _ = self.run_case(case, output="numpy")
                self.assertEqual(digests, self.cases[case]["digests"])

    @need_torch
    def test_normalize_u8_is_f32(self):
        # faster.normalize on a u8-hwc batch gives the f32-chw batch of
        # the same samples bit for bit (the train recipe: random crops and
        # flips, the same draws in both layouts), channels-last memory by
        # default, contiguous NCHW on request; bad input is refused.
        import torch
        with self.open("train-f32", output="torch") as f32, self.open("train-f32", output="torch", layout="u8-hwc") as u8:
            n = 0
            for a, b in zip(f32.batches(), u8.batches()):
                self.assertEqual(b.images.dtype, torch.uint8)
                self.assertEqual(list(a.keys), list(b.keys))
                x = faster.normalize(b.images)
                self.assertEqual(x.dtype, torch.float32)
                self.assertEqual(tuple(x.shape), tuple(a.images.shape))
                self.assertTrue(x.is_contiguous(memory_format=torch.channels_last))
                self.assertTrue(torch.equal(x.contiguous().view(torch.int32), a.images.contiguous().view(torch.int32)),
                                "normalize(u8-hwc) is not f32-chw's bits")
                y = faster.normalize(b.images, channels_last=False)
                self.assertTrue(y.is_contiguous() and torch.equal(y.view(torch.int32), a.images.view(torch.int32)))
                if n == 0 and importlib.util.find_spec("torchvision") is not None:
                    # torchvision's own ToTensor and Normalize on each image
                    # of the batch (as a PIL image: the user's transform).
                    import torchvision.transforms as T
                    from PIL import Image
                    tv = T.Compose([T.ToTensor(), T.Normalize(faster.IMAGENET_MEAN, faster.IMAGENET_STD)])
                    for i in range(b.images.shape[0]):
                        want = tv(Image.fromarray(b.images[i].numpy()))
                        self.assertTrue(torch.equal(x[i].contiguous().view(torch.int32), want.view(torch.int32)),
                                        "normalize is not torchvision's ToTensor + Normalize")
                if torch.cuda.is_available():  # the GPU machine's check: true divisions there too
                    g = faster.normalize(b.images.cuda(), channels_last=False).cpu()
                    self.assertTrue(torch.equal(g.view(torch.int32), a.images.view(torch.int32)),
                                    "normalize on CUDA is not f32-chw's bits")
                # Another arithmetic, (v - 255 mean) / (255 std), is not
                # (the test can tell them apart).
                m = torch.tensor(faster.IMAGENET_MEAN).view(1, 3, 1, 1) * 255
                s = torch.tensor(faster.IMAGENET_STD).view(1, 3, 1, 1) * 255
                other = b.images.permute(0, 3, 1, 2).float().sub(m).div(s)
                self.assertFalse(torch.equal(other.contiguous().view(torch.int32), a.images.view(torch.int32)))
                n += 1
            self.assertGreater(n, 0)
        with self.assertRaises(ValueError):
            faster.normalize(torch.zeros(2, 4, 4, 3))  # floats
        with self.assertRaises(ValueError):
            faster.normalize(torch.zeros(2, 3, 4, 4, dtype=torch.uint8))  # NCHW: 4 channels last
        with self.assertRaises(TypeError):
            faster.normalize(np.zeros((2, 4, 4, 3), dtype=np.uint8))

    @need_torch
    def test_bit_identical_torch_and_set_epoch(self):
        # Epochs in order on one Loader (one server), as a training loop
        # runs them: epoch 1 must be what the Go loader makes of epoch 1
        # after epoch 0.
        import torch
        with self.open("train-f32", output="torch") as l:
            for epoch, case in ((0, "train-f32"), (1, "train-f32-epoch1")):
                l.set_epoch(epoch)
                digests = []
                for b in l.batches():
                    self.assertIsInstance(b.images, torch.Tensor)
                    self.assertEqual(b.images.dtype, torch.float32)
                    self.assertEqual(b.labels.dtype, torch.int64)
                    self.assertEqual(tuple(b.images.shape[1:]), (3, 32, 32))
                    self.assertEqual(b.epoch, epoch)
                    digests.append(digest(b.images.numpy(), b.labels.numpy(), b.keys))
                self.assertEqual(digests, self.cases[case]["digests"])
                self.assertEqual(len(l), len(digests))

    def test_zero_copy_views(self):
        with self.open("train-f32", output="numpy") as l:
            base = np.frombuffer(l._mm, np.uint8).ctypes.data
            end = base + l.hello["size"]
            for b in l.batches():
                addr = b.images.__array_interface__["data"][0]
                self.assertTrue(base <= addr < end, "images do not view the shared memory")
                self.assertFalse(b.images.flags.owndata)
                addr = b.labels.__array_interface__["data"][0]
                self.assertTrue(base <= addr < end, "labels do not view the shared memory")
            # The file was unlinked once both sides mapped it.
            self.assertFalse(os.path.exists(l.hello["path"]))

    @need_torch
    def test_torch_zero_copy_and_pin(self):
        import torch
        with self.open("train-f32", output="torch") as l:
            base = np.frombuffer(l._mm, np.uint8).ctypes.data
            end = base + l.hello["size"]
            for images, labels in l:
                self.assertTrue(base <= images.data_ptr() < end)
                self.assertTrue(base <= labels.data_ptr() < end)
                if torch.cuda.is_available():
                    x = images.pin_memory().cuda(non_blocking=True)
                    self.assertTrue(torch.equal(x.cpu(), images))

    def test_ranks_disjoint_complete_equal(self):
        # 33 samples on 2 ranks: rank 1 repeats one sample so that both
        # serve 17 in batches of the same sizes (4, 4, 4, 4, 1), none empty.
        all_keys = set(self.cases["train-f32"]["keys"])
        got = {}
        for case in ("rank0", "rank1"):
            with self.open(case, output="numpy") as l:
                digests, first, sizes, repeats = [], [], [], 0
                for b in l.batches():
                    digests.append(digest(b.images, b.labels, b.keys))
                    first += [k for k, m in zip(b.keys, b.mask) if m]
                    sizes.append(b.valid)
                    repeats += b.repeats
                self.assertEqual(digests, self.cases[case]["digests"])
                self.assertEqual(len(l), len(digests))
                got[case] = (first, sizes, repeats)
        (k0, s0, r0), (k1, s1, r1) = got["rank0"], got["rank1"]
        self.assertEqual(s0, s1, "ranks take different steps")
        self.assertNotIn(0, s0)
        self.assertEqual((r0, r1), (0, 1))
        self.assertFalse(set(k0) & set(k1), "ranks overlap")
        self.assertEqual(set(k0) | set(k1), all_keys)
        self.assertEqual(len(k0) + len(k1), len(all_keys))

    def test_set_epoch_on_streamed_shards(self):
        # Packed shards read as streams: set_epoch(2) on a fresh loader, and
        # epoch 2 after epochs 0 and 1 on one loader, are both what the Go
        # loader makes of epoch 2 after 0 and 1; epoch 1 differs.
        want2, want1 = self.cases["shards-epoch2"]["digests"], self.cases["shards-epoch1"]["digests"]
        self.assertNotEqual(want1, want2)
        with self.open("shards-epoch2", output="numpy") as l:
            digests = [digest(b.images, b.labels, b.keys) for b in l.batches()]
            self.assertEqual(digests, want2, "a fresh loader at set_epoch(2)")
            self.assertEqual(len(l), len(digests))
        with self.open("shards-epoch2", output="numpy", epoch=0) as l:
            for e in (0, 1, 2):
                l.set_epoch(e)
                digests = [digest(b.images, b.labels, b.keys) for b in l.batches()]
                if e == 1:
                    self.assertEqual(digests, want1)
            self.assertEqual(digests, want2, "epoch 2 after epochs 0 and 1")

    @need_torch
    def test_torch_ddp_unequal_ranks_default_padding(self):
        # Two torch DDP processes (gloo, CPU) on 33 samples: rank 1 has one
        # fewer. With the default drop_last=False both run len(loader) steps
        # of the same sizes (the last of one row on both, through
        # BatchNorm), none hangs in an all-reduce, and the samples served
        # are the epoch once plus the one reported repeat.
        script = textwrap.dedent("""
            import json, os, sys, torch, torch.distributed as dist, torch.nn as nn
            import faster
            from torch.nn.parallel import DistributedDataParallel as DDP
            rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
            dist.init_process_group("gloo", rank=rank, world_size=world)
            torch.manual_seed(0)
            torch.set_num_threads(1)
            model = DDP(nn.Sequential(nn.Conv2d(3, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU(),
                                      nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(4, 3)))
            opt = torch.optim.SGD(model.parameters(), lr=0.01)
            out = {"steps": [], "sizes": [], "keys": [], "repeats": 0}
            with faster.Loader(sys.argv[1], batch_size=4, resolution=16, seed=3, workers=1) as l:
                out["len"] = len(l)
                for epoch in range(2):
                    l.set_epoch(epoch)
                    n = 0
                    for b in l.batches():
                        loss = nn.functional.cross_entropy(model(b.images), b.labels)
                        opt.zero_grad()
                        loss.backward()
                        opt.step()
                        n += 1
                        if epoch == 0:
                            out["sizes"].append(b.valid)
                            out["repeats"] += b.repeats
                            out["keys"] += [k for k, m in zip(b.keys, b.mask) if m]
                    out["steps"].append(n)
            dist.destroy_process_group()
            print(json.dumps(out))
        """)
        import socket
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        procs = []
        for rank in range(2):
            env = dict(os.environ, RANK=str(rank), WORLD_SIZE="2", MASTER_ADDR="127.0.0.1",
                       MASTER_PORT=str(port), OMP_NUM_THREADS="1")
            procs.append(subprocess.Popen([sys.executable, "-c", script, self.data], env=env,
                                          stdout=subprocess.PIPE, stderr=subprocess.PIPE))
        outs = []
        for p in procs:
            try:
                o, e = p.communicate(timeout=180)
            except subprocess.TimeoutExpired:
                for q in procs:
                    q.kill()
                self.fail("a DDP rank hung")
            self.assertEqual(p.returncode, 0, e.decode()[-2000:])
            outs.append(json.loads(o.decode().strip().splitlines()[-1]))
        r0, r1 = outs
        self.assertEqual(r0["steps"], [r0["len"]] * 2)
        self.assertEqual(r1["steps"], r0["steps"])
        self.assertEqual(r0["sizes"], r1["sizes"])
        self.assertEqual(r0["sizes"], [4, 4, 4, 4, 1])
        self.assertEqual((r0["repeats"], r1["repeats"]), (0, 1))
        keys = r0["keys"] + r1["keys"]
        self.assertEqual(len(keys), 33)
        self.assertEqual(set(keys), set(self.cases["train-f32"]["keys"]))

    def test_rank_from_environment(self):
        old = {k: os.environ.get(k) for k in ("RANK", "WORLD_SIZE")}
        os.environ.update(RANK="1", WORLD_SIZE="2")
        try:
            with self.open("rank1", rank=None, world_size=None, output="numpy") as l:
                self.assertEqual((l.rank, l.world_size), (1, 2))
                digests = [digest(b.images, b.labels, b.keys) for b in l.batches()]
            self.assertEqual(digests, self.cases["rank1"]["digests"])
        finally:
            for k, v in old.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v

    def test_early_break_next_epoch_and_replay(self):
        with self.open("train-f32", output="numpy", slots=2) as l:
            for i, _ in enumerate(l):
                if i == 1:
                    break
            l.set_epoch(1)
            digests = [digest(b.images, b.labels, b.keys) for b in l.batches()]
            self.assertEqual(digests, self.cases["train-f32-epoch1"]["digests"])
            # set_epoch back to 0 replays epoch 0 (order and augmentations),
            # as with DistributedSampler.
            l.set_epoch(0)
            digests = [digest(b.images, b.labels, b.keys) for b in l.batches()]
            self.assertEqual(digests, self.cases["train-f32"]["digests"])
            # An abandoned iterator is ended by the next one.
            it = iter(l)
            next(it)
            l.set_epoch(2)
            self.assertEqual(sum(1 for _ in l), len(self.cases["train-f32"]["digests"]))
            del it

    def test_server_killed(self):
        l = self.open("train-f32", output="numpy", slots=2)
        try:
            it = l.batches()
            next(it)
            pid = l.pid
            os.kill(pid, signal.SIGKILL)
            t0 = time.monotonic()
            with self.assertRaises(faster.ServerError) as cm:
                for _ in range(100):
                    next(it)
            took = time.monotonic() - t0
            self.assertLess(took, 1.0, "death noticed after %.2fs" % took)
            self.assertIn("killed by signal 9", str(cm.exception))
            self.assertEqual(shm_files(pid), [])
        finally:
            l.close()

    def test_bad_data_is_a_clear_error(self):
        with self.assertRaises(faster.ServerError) as cm:
            faster.Loader(os.path.join(self.data, "no-such-dir"), batch_size=2)
        self.assertIn("no-such-dir", str(cm.exception))

    def test_label_offset_reaches_the_server(self):
        # The test data is an ImageFolder, whose labels are folder indices:
        # the server refuses an offset, so the option got there.
        with self.assertRaises(faster.ServerError) as cm:
            faster.Loader(self.data, batch_size=2, label_offset=-1)
        self.assertIn("label offset -1", str(cm.exception))

    def test_client_killed(self):
        # A consumer holding every slot (the server blocks on the ring) dies.
        script = textwrap.dedent("""
            import os, signal, sys, faster
            l = faster.Loader(sys.argv[1], batch_size=2, resolution=16, slots=2, output="numpy", workers=1)
            it = l.batches()
            next(it)
            print(l.pid, flush=True)
            os.kill(os.getpid(), signal.SIGKILL)
        """)
        p = subprocess.run([sys.executable, "-c", script, self.data], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, timeout=60)
        self.assertEqual(p.returncode, -signal.SIGKILL, p.stderr.decode())
        pid = int(p.stdout.split()[0])
        deadline = time.monotonic() + 2
        while not gone(pid) and time.monotonic() < deadline:
            time.sleep(0.02)
        self.assertTrue(gone(pid), "the server outlived its consumer")
        self.assertEqual(shm_files(pid), [])


if __name__ == "__main__":
    unittest.main()


class DefaultRankTest(unittest.TestCase):
    """Rank defaults: torchrun's variables, else Open MPI's, else an srun
    task's (a batch script without a step is one process)."""

    NAMES = ("RANK", "WORLD_SIZE", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "SLURM_PROCID",
             "SLURM_STEP_ID", "SLURM_STEPID", "SLURM_NTASKS", "SLURM_STEP_NUM_TASKS")

    def ranks(self, **env):
        from faster.loader import _default_rank
        old = {k: os.environ.pop(k, None) for k in self.NAMES}
        os.environ.update(env)
        try:
            return _default_rank(None, None)
        finally:
            for k in self.NAMES:
                os.environ.pop(k, None)
                if old[k] is not None:
                    os.environ[k] = old[k]

    def test_precedence(self):
        srun = dict(SLURM_PROCID="1", SLURM_STEP_ID="0", SLURM_NTASKS="4")
        self.assertEqual(self.ranks(), (0, 1))
        self.assertEqual(self.ranks(**srun), (1, 4))
        self.assertEqual(self.ranks(SLURM_PROCID="0", SLURM_NTASKS="4"), (0, 1))  # sbatch script
        self.assertEqual(self.ranks(OMPI_COMM_WORLD_RANK="3", OMPI_COMM_WORLD_SIZE="6", **srun), (3, 6))
        self.assertEqual(self.ranks(RANK="5", WORLD_SIZE="8", OMPI_COMM_WORLD_RANK="3", OMPI_COMM_WORLD_SIZE="6", **srun), (5, 8))
