"""faster.Loader as a DataLoader drop-in (issue 25): one test per point.

Run by serve.TestPython, which builds the binary (FASTER_BIN) and writes
the Go loader's batches for the cases and the datasets of every kind
(FASTER_TEST_EXPECT)."""
import importlib.util
import json
import os
import shutil
import tempfile
import unittest
import warnings

import faster
from faster import _meter

from test_loader import EXPECT, REQUIRE, digest, need_torch

HAVE_TORCHVISION = importlib.util.find_spec("torchvision") is not None


class FakeClock:
    def __init__(self):
        self.t = 100.0

    def __call__(self):
        return self.t


@unittest.skipUnless(EXPECT, "FASTER_TEST_EXPECT not set: run through `go test ./serve`")
class DataLoaderTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        with open(EXPECT) as f:
            e = json.load(f)
        cls.data = e["data"]
        cls.cases = {c["name"]: c for c in e["cases"]}
        cls.kinds = e["kinds"]

    def case(self, name, **kw):
        c = self.cases[name]
        args = dict(batch_size=c["batch"], transform=c["transform"], layout=c["layout"],
                    resolution=c["resolution"], seed=c["seed"], rank=c["rank"], world_size=c["world"],
                    drop_last=c["drop"], num_workers=2, output="numpy")
        args.update(kw)
        return faster.Loader(c.get("data") or self.data, **args)

    @staticmethod
    def epoch(l):
        return [digest(b.images, b.labels, b.keys) for b in l.batches()]

    # 1. A new iteration is the next epoch; set_epoch and epoch= stay exact.
    def test_each_iteration_is_the_next_epoch(self):
        e0, e1 = self.cases["train-f32"]["digests"], self.cases["train-f32-epoch1"]["digests"]
        with self.case("train-f32") as l:
            self.assertEqual(self.epoch(l), e0)
            self.assertEqual(self.epoch(l), e1, "the second iteration repeated epoch 0")
            l.set_epoch(0)
            self.assertEqual(self.epoch(l), e0, "set_epoch(0) after two epochs")
            # As a training loop calls it: for images, labels in loader.
            keys = []
            for _ in l:
                keys += l.last_keys
            self.assertEqual(sorted(keys), sorted(self.cases["train-f32"]["keys"]))
        with self.case("train-f32", epoch=1) as l:
            self.assertEqual(self.epoch(l), e1, "a fresh loader at epoch=1")

    # 8. The study's recipe written as torchvision's Compose is the same
    # recipe: the same batches, bit for bit, as transform="train".
    def test_compose_is_the_recipe(self):
        if not HAVE_TORCHVISION:
            if REQUIRE:
                self.fail("torchvision is not installed (python3-torchvision)")
            self.skipTest("torchvision is not installed")
        from torchvision import transforms as T
        tf = T.Compose([T.RandomResizedCrop(32), T.RandomHorizontalFlip(), T.ToTensor(),
                        T.Normalize(mean=[0.485, 0.456, 0.406], std=[0.229, 0.224, 0.225])])
        with self.case("train-f32", transform=tf) as l:
            self.assertEqual(self.epoch(l), self.cases["train-f32"]["digests"])

    # 2. .sampler and .dataset with DataLoader's meanings.
    def test_sampler_and_dataset(self):
        with self.case("train-f32") as l:
            l.sampler.set_epoch(1)
            self.assertEqual(l.sampler.epoch, 1)
            self.assertEqual(self.epoch(l), self.cases["train-f32-epoch1"]["digests"])
            self.assertEqual(len(l.sampler), 33)
            self.assertEqual(len(l.dataset), 33)
            self.assertEqual(l.dataset.classes, ["ant", "bee", "cat"])
            self.assertEqual(l.dataset.class_to_idx, {"ant": 0, "bee": 1, "cat": 2})
            if HAVE_TORCHVISION:
                from torchvision.datasets import ImageFolder
                tv = ImageFolder(self.data)
                self.assertEqual(l.dataset.samples, tv.samples)
                self.assertEqual(l.dataset.targets, tv.targets)
                self.assertEqual(l.dataset.classes, tv.classes)
            elif REQUIRE:
                self.fail("torchvision is not installed (python3-torchvision)")
        with self.case("rank1") as l:
            self.assertEqual((l.sampler.num_replicas, l.sampler.rank), (2, 1))
            self.assertEqual(len(l.sampler), 17)  # DistributedSampler's num_samples: ceil(33 / 2)
            self.assertEqual(len(l.dataset), 33)
            if HAVE_TORCHVISION:
                from torch.utils.data import DistributedSampler
                self.assertEqual(len(l.sampler), len(DistributedSampler(range(33), num_replicas=2, rank=1)))
        with faster.Loader(self.kinds["shards"], batch_size=4, resolution=16, num_workers=1, output="numpy") as l:
            self.assertEqual(len(l.dataset), 33)
            with self.assertRaisesRegex(AttributeError, "not an ImageFolder"):
                l.dataset.samples

    # 3. Exact evaluation: every sample once over the ranks.
    def test_exact_evaluation(self):
        for world in (2, 3, 4):
            keys, lens = [], []
            for rank in range(world):
                with faster.Loader(self.data, batch_size=4, transform="eval", resolution=16, rank=rank,
                                   world_size=world, exact=True, num_workers=1, output="numpy") as l:
                    n = 0
                    for b in l.batches():
                        self.assertEqual(b.repeats, 0)
                        keys += b.keys
                        n += 1
                    self.assertEqual(n, len(l))
                    lens.append(len(l.sampler))
            self.assertEqual(sorted(keys), sorted(self.cases["train-f32"]["keys"]), "W=%d" % world)
            self.assertEqual(sum(lens), 33)

    # 4. Fewer samples than ranks: each rank serves a row, as
    # DistributedSampler does (before: "this rank's part of the epoch is empty").
    def test_fewer_samples_than_ranks(self):
        tmp = tempfile.mkdtemp()
        try:
            for i, cls in enumerate(("ant", "bee", "cat")):
                os.makedirs(os.path.join(tmp, cls))
                shutil.copy(os.path.join(self.data, cls, "000.jpg"), os.path.join(tmp, cls))
            served = []
            for rank in range(4):
                with faster.Loader(tmp, batch_size=2, resolution=16, rank=rank, world_size=4,
                                   num_workers=1, output="numpy") as l:
                    self.assertEqual((len(l), len(l.sampler)), (1, 1))
                    bs = list(l.batches())
                    self.assertEqual([b.valid for b in bs], [1])
                    self.assertEqual(bs[0].repeats, 1 if rank == 3 else 0)
                    served += bs[0].keys
            self.assertEqual(sorted(set(served)), ["ant/000.jpg", "bee/000.jpg", "cat/000.jpg"])
            self.assertEqual(len(served), 4)
        finally:
            shutil.rmtree(tmp)

    # 5. DataLoader's argument names: num_workers=0 is one thread (not all
    # cores), pin_memory is accepted.
    def test_num_workers_and_pin_memory(self):
        for kw, want in ((dict(num_workers=0), "1"), (dict(num_workers=3), "3"), (dict(workers=0), "0")):
            with faster.Loader(self.data, batch_size=4, resolution=16, output="numpy", **kw) as l:
                # The server's word: the threads its loader was opened with.
                self.assertEqual(str(l.hello["workers"]), want, kw)
                self.assertEqual(len(list(l.batches())), 9)

    @need_torch
    def test_pin_memory_without_a_gpu(self):
        import torch
        if torch.cuda.is_available():
            self.skipTest("a GPU is here: pinned copies are tested by the GPU suite")
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            with faster.Loader(self.data, batch_size=4, resolution=16, num_workers=1, pin_memory=True,
                               shuffle=False, drop_last=True) as l:
                n = sum(1 for _ in l)
                n += sum(1 for _ in l)
        self.assertEqual(n, 16)  # drop_last: 8 whole batches of 4 per epoch
        self.assertEqual(sum("pin_memory" in str(x.message) for x in w), 1, [str(x.message) for x in w])

    # 6. state_dict / load_state_dict on every kind of data, also with
    # another world size.
    def test_state_dict_resumes_every_kind(self):
        kinds = [(k, self.kinds[k], {}) for k in ("imagefolder", "shards", "wds", "lmdb") if self.kinds.get(k)]
        kinds.append(("shards-global", self.kinds["shards"], {"global_shuffle": True}))
        for name, path, extra in kinds:
            with self.subTest(kind=name):
                args = dict(batch_size=3, resolution=16, seed=11, num_workers=1, output="numpy", world_size=2, **extra)
                full = []
                for rank in range(2):
                    with faster.Loader(path, rank=rank, epoch=2, **args) as l:
                        full.append([b.keys for b in l.batches()])
                # Two steps on both ranks, then rank 0's state (a script that
                # checkpoints on rank 0).
                for rank in range(2):
                    with faster.Loader(path, rank=rank, epoch=2, **args) as l:
                        it = l.batches()
                        got = [next(it).keys, next(it).keys]
                        self.assertEqual(got, full[rank][:2])
                        if rank == 0:
                            state = json.loads(json.dumps(l.state_dict()))  # JSON-serialisable
                        it.close()
                self.assertEqual(state["epoch"], 2)
                for rank in range(2):
                    with faster.Loader(path, rank=rank, **args) as l:
                        l.load_state_dict(state)
                        self.assertEqual([b.keys for b in l.batches()], full[rank][2:], "rank %d" % rank)
                        # The epoch after is whole again, and the state says so.
                        self.assertEqual(l.state_dict()["epoch"], 3)
                        self.assertEqual(len(list(l.batches())), len(full[rank]))
                first = [k for r in range(2) for b in full[r][:2] for k in b]
                if name == "shards":
                    # A stream's order depends on the ranks: refused by name,
                    # when the state is loaded (the server checks again).
                    with faster.Loader(path, rank=0, **dict(args, world_size=3)) as l:
                        with self.assertRaisesRegex(ValueError, "ranks it was saved with"):
                            l.load_state_dict(state)
                        self.assertEqual(len(list(l.batches())), len(l))
                    continue
                rest = []
                for rank in range(3):
                    with faster.Loader(path, rank=rank, **dict(args, world_size=3)) as l:
                        l.load_state_dict(state)
                        rest += [k for b in l.batches() for k, m in zip(b.keys, b.mask) if m]
                self.assertEqual(sorted(first + rest), sorted(self.cases["train-f32"]["keys"]),
                                 "2 ranks' first steps + 3 ranks' rest")

    def test_tensorflow_shards_len_and_labels(self):
        # TensorFlow's build_imagenet_data.py shards (no extension, no
        # index, labels from 1), written by an independent writer: len()
        # is known (the records are counted), classes= checks the labels
        # and names the offset; label_offset=-1 serves 0..N-1.
        tmp = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, tmp)
        writer = os.path.join(os.path.dirname(__file__), "..", "..", "shard", "shardtest", "tfimagenet.py")
        import subprocess, sys
        subprocess.check_call([sys.executable, writer, tmp, "--split", "train", "--shards", "2",
                               "--per-shard", "6", "--classes", "3", "--index", "none"])
        args = dict(batch_size=4, resolution=16, num_workers=1, output="numpy", shuffle=False)
        with faster.Loader(tmp, classes=3, **args) as l:
            self.assertEqual(len(l), 3)  # before: TypeError, the length unknown without indexes
            with self.assertRaisesRegex(faster.ServerError, "label-offset -1"):
                list(l.batches())
        with faster.Loader(tmp, classes=3, label_offset=-1, **args) as l:
            labels = sorted(int(x) for b in l.batches() for x in b.labels)
        self.assertEqual(labels, sorted(k % 3 for k in range(12)))

    def test_webdataset_without_labels(self):
        # A tar written by Python's tarfile with images and no .cls: damaged
        # by default (never class 0 silently), served as label 0 with
        # unlabeled=True.
        import io, tarfile
        tmp = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, tmp)
        path = os.path.join(tmp, "shard-000000.tar")
        with tarfile.open(path, "w", format=tarfile.PAX_FORMAT) as tf:
            for cls in ("ant", "bee"):
                for i in range(3):
                    with open(os.path.join(self.data, cls, "%03d.jpg" % i), "rb") as f:
                        b = f.read()
                    ti = tarfile.TarInfo("%s_%d.jpg" % (cls, i))
                    ti.size = len(b)
                    tf.addfile(ti, io.BytesIO(b))
        args = dict(batch_size=2, resolution=16, num_workers=1, output="numpy")
        with self.assertRaisesRegex(faster.ServerError, "label"):
            with faster.Loader(path, **args) as l:
                list(l.batches())
        with faster.Loader(path, unlabeled=True, **args) as l:
            labels = [int(x) for b in l.batches() for x in b.labels]
        self.assertEqual(labels, [0] * 6)

    def test_state_dict_refuses_another_dataset(self):
        with self.case("train-f32") as l:
            state = l.state_dict()
        with self.case("train-f32", seed=8) as l:
            with self.assertRaisesRegex(ValueError, "seed"):
                l.load_state_dict(state)

    # 7. Is the training input-bound? The arithmetic with injected clocks.
    def test_input_bound_arithmetic(self):
        server = {"ceiling": {"images_per_s": 2400.0, "stage": "decode", "bottleneck": "decode"},
                  "stats": {"verdict": {"detail": "decode: stage \"decode\" busy 97% of the run"}}}
        for name, wait, step, bound in (("slow consumer", 0.001, 1.0, False), ("fast consumer", 1.0, 0.1, True)):
            clock = FakeClock()
            m = _meter.InputMeter(clock)
            m.begin()
            for _ in range(10):
                m.waiting()
                clock.t += wait  # the loader's wait for the batch
                m.got(256)
                clock.t += step  # the training step
            r = m.end(server, epoch=4)
            self.assertEqual(r["input_bound"], bound, name)
            self.assertAlmostEqual(r["input_wait_share"], wait / (wait + step), places=9)
            self.assertAlmostEqual(r["consumer_images_per_s"], 256 / step, places=6)
            self.assertEqual(r["images"], 2560)
            if bound:
                self.assertIn("training waited for input 91% of the time", r["summary"])
                self.assertIn("decode-bound at 2,400 img/s", r["summary"])
                self.assertIn("more workers", r["summary"])
            else:
                self.assertIn("not input-bound", r["summary"])

    def test_stats_from_the_server(self):
        clock = FakeClock()
        lines = []
        with self.case("train-f32", clock=clock, report=lines.append) as l:
            self.assertIsNone(l.stats())
            for _ in l:
                clock.t += 1.0  # a slow training step; the waits take no (fake) time
        s = l.stats()
        self.assertFalse(s["input_bound"])
        self.assertEqual((s["epoch"], s["batches"], s["images"]), (0, 7, 33))
        self.assertGreater(s["loader_ceiling_images_per_s"], 0)
        self.assertIn(s["bottleneck"], ("decode", "io"))
        self.assertTrue(s["limiting_stage"])
        # The server decoded 33 images: some CPU time, and its price per
        # 1,000 is that time's share (the server's own arithmetic, checked
        # with an injected clock in serve.TestServeEpochCPU).
        self.assertGreater(s["loader_cpu_seconds"], 0)
        self.assertAlmostEqual(s["loader_cpu_seconds_per_1000_images"], s["loader_cpu_seconds"] / 33 * 1000, places=6)
        self.assertEqual(len(lines), 1)
        self.assertTrue(lines[0].startswith("faster: epoch 0: training waited for input 0% of the time"), lines[0])


if __name__ == "__main__":
    unittest.main()
