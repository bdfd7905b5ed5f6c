"""DataLoader's sampler=, batch_sampler=, generator= and base seed, and
torchvision's RASampler, through faster.Loader (issue 39 items 4, 5;
docs/serve.md, "DataLoader's arguments and samplers").

Each is compared with torch's own DataLoader over a dataset that returns
its index (so DataLoader's batches are the indices its sampler gave), run
from the same torch seed: the samplers draw from torch's default generator
as DataLoader lets them, and the base seed is DataLoader's. RASampler is
the classification reference's (references/classification/sampler.py,
not installed with torchvision): written here from its documented
behaviour, as serve's Go test writes it.
"""
import importlib.util
import math
import os
import shutil
import tempfile
import unittest

import faster

HAVE_TORCH = importlib.util.find_spec("torch") is not None
REQUIRE = os.environ.get("FASTER_REQUIRE_DATA") == "1"
N = 402  # 128 per rank on 2 ranks under RASampler(repetitions=3): floor(402 // 256 * 256 / 2)


class RASampler:
    """torchvision's RASampler (references/classification/sampler.py, 0.14),
    from its documentation: each index repeated `repetitions` times in a
    row, the list padded with its own start to total_size =
    ceil(n·reps/world)·world, rank r's indices[r:total_size:world], cut to
    floor(n // 256 · 256 / world); shuffled by randperm seeded seed + epoch."""

    def __init__(self, dataset, num_replicas, rank, shuffle=True, seed=0, repetitions=3):
        self.n, self.num_replicas, self.rank = len(dataset), num_replicas, rank
        self.shuffle, self.seed, self.repetitions, self.epoch = shuffle, seed, repetitions, 0
        self.num_samples = int(math.ceil(self.n * float(repetitions) / num_replicas))
        self.total_size = self.num_samples * num_replicas
        self.num_selected_samples = int(math.floor(self.n // 256 * 256 / num_replicas))

    def __iter__(self):
        import torch
        if self.shuffle:
            g = torch.Generator()
            g.manual_seed(self.seed + self.epoch)
            order = torch.randperm(self.n, generator=g).tolist()
        else:
            order = list(range(self.n))
        ind = [i for i in order for _ in range(self.repetitions)]
        ind += ind[:self.total_size - len(ind)]
        return iter(ind[self.rank:self.total_size:self.num_replicas][:self.num_selected_samples])

    def __len__(self):
        return self.num_selected_samples

    def set_epoch(self, epoch):
        self.epoch = epoch


def _index_dataset(n):
    import torch

    class Index(torch.utils.data.Dataset):
        def __len__(self):
            return n

        def __getitem__(self, i):
            return i
    return Index()


@unittest.skipUnless(HAVE_TORCH or REQUIRE, "torch is not installed")
class Samplers(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        from PIL import Image
        cls.root = tempfile.mkdtemp(prefix="faster-samplers-")
        cls.keys = []
        for c in range(2):
            d = os.path.join(cls.root, "c%d" % c)
            os.makedirs(d)
            for i in range(N // 2):
                Image.new("RGB", (12 + i % 5, 10), (i % 256, c * 90, 7)).save(os.path.join(d, "%03d.jpg" % i))
                cls.keys.append("c%d/%03d.jpg" % (c, i))
        cls.index = {k: i for i, k in enumerate(cls.keys)}

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.root)

    def loader(self, **kw):
        args = dict(batch_size=5, transform="eval", resolution=8, output="numpy", num_workers=1)
        args.update(kw)
        if "sampler" not in kw or kw["sampler"] is None or type(kw["sampler"]).__name__ not in ("DistributedSampler", "RASampler"):
            args.setdefault("rank", 0)
            args.setdefault("world_size", 1)
        return faster.Loader(self.root, **args)

    def epoch(self, loader):
        """(indices, batch sizes) of the loader's next epoch."""
        idx, sizes = [], []
        for b in loader.batches():
            idx += [self.index[k] for k in b.keys]
            sizes.append(b.valid)
        return idx, sizes

    def dataloader(self, sampler, batch_size=5, drop_last=False, generator=None):
        import torch
        dl = torch.utils.data.DataLoader(_index_dataset(N), batch_size=batch_size, sampler=sampler,
                                         drop_last=drop_last, generator=generator)
        idx, sizes = [], []
        for b in dl:
            idx += b.tolist()
            sizes.append(len(b))
        return idx, sizes

    def test_samplers_as_dataloader(self):
        # Each sampler DataLoader takes, from the same torch seed: the same
        # indices in the same batches, two epochs running (the sampler
        # iterated anew each epoch, as DataLoader iterates it).
        import numpy as np
        import torch
        from torch.utils.data import (RandomSampler, SequentialSampler, SubsetRandomSampler,
                                      WeightedRandomSampler)
        weights = [1.0 + (i % 7) for i in range(N)]
        makers = {
            "SequentialSampler": lambda: SequentialSampler(range(N)),
            "RandomSampler": lambda: RandomSampler(range(N)),
            "RandomSampler(replacement)": lambda: RandomSampler(range(N), replacement=True, num_samples=77),
            "SubsetRandomSampler": lambda: SubsetRandomSampler(list(range(3, N, 4))),
            "WeightedRandomSampler": lambda: WeightedRandomSampler(weights, 150, replacement=True),
            "list": lambda: [7, 3, 3, 400, 0, 12, 3],
            "range": lambda: range(N - 1, N - 12, -1),
            "numpy": lambda: np.array([1, 2, 401, 2], dtype=np.int32),
            "tensor": lambda: torch.tensor([9, 8, 9]),
        }
        for name, make in makers.items():
            for drop in (False, True):
                with self.subTest(sampler=name, drop_last=drop):
                    torch.manual_seed(21)
                    s = make()
                    want = [self.dataloader(s, drop_last=drop) for _ in range(2)]
                    torch.manual_seed(21)
                    with self.loader(sampler=make(), drop_last=drop) as l:
                        self.assertIs(l.sampler.__class__, s.__class__)
                        n = len(l)
                        got = [self.epoch(l) for _ in range(2)]
                    self.assertEqual(got[0], want[0])
                    self.assertEqual(got[1], want[1])
                    self.assertEqual(n, len(want[0][1]))

    def test_seed_drawn_as_dataloader(self):
        # Without seed=: torch.manual_seed(s) makes the run (order and
        # augmentation) reproducible, another s another run, and the base
        # seed is DataLoader's for s (its generator= too). With seed=: that
        # seed, whatever torch's, and a fresh loader at epoch e serves the
        # long-running loader's epoch e. (Before: seed=0 whatever torch's.)
        import torch
        pixels = {}
        for s in (5, 5, 6):
            torch.manual_seed(s)
            with self.loader(transform="train", resolution=8) as l:
                keys, rows = [], []
                for b in l.batches():
                    keys += b.keys
                    rows.append(b.images.copy())
                pixels.setdefault(s, []).append((keys, rows, l.seed()))
        (k5, r5, s5), (k5b, r5b, s5b) = pixels[5]
        k6, _, s6 = pixels[6][0]
        self.assertEqual((k5, s5), (k5b, s5b))
        self.assertTrue(all((a == b).all() for a, b in zip(r5, r5b)))
        self.assertNotEqual(k5, k6)
        self.assertNotEqual(s5, s6)
        torch.manual_seed(5)
        it = iter(torch.utils.data.DataLoader(_index_dataset(N)))
        self.assertEqual(s5, it._base_seed)
        g = torch.Generator().manual_seed(9)
        want = iter(torch.utils.data.DataLoader(_index_dataset(N), generator=g))._base_seed
        with self.loader(generator=torch.Generator().manual_seed(9)) as l:
            self.epoch(l)
            self.assertEqual(l.seed(), want)
        # seed= fixes it; a fresh loader at epoch 2 is epoch 2.
        runs = []
        for s in (1, 2):
            torch.manual_seed(s)
            with self.loader(transform="train", seed=7) as l:
                runs.append([self.epoch(l)[0] for _ in range(3)])
        self.assertEqual(runs[0], runs[1])
        with self.loader(transform="train", seed=7, epoch=2) as l:
            self.assertEqual(self.epoch(l)[0], runs[0][2])
            self.assertEqual(l.seed(), 7)
        # A state saved without seed= carries the drawn seed: a fresh
        # loader (another torch seed) resumes that run.
        torch.manual_seed(31)
        with self.loader(transform="train") as l:
            first = self.epoch(l)[0]
            it = l.batches()
            b = next(it)
            st = l.state_dict()
            head = [self.index[k] for k in b.keys]
            rest = [self.index[k] for b in it for k in b.keys]
        torch.manual_seed(32)
        with self.loader(transform="train") as l:
            l.load_state_dict(st)
            self.assertEqual([self.index[k] for b in l.batches() for k in b.keys], rest)
            self.assertEqual(st["seed"], l.seed())
        self.assertEqual(len(head) + len(rest), len(first))

    def test_ra_sampler(self):
        # RASampler(repetitions=3) on 2 ranks: 128 samples per rank with
        # its repeats (before: no option, 201 per rank without repeats),
        # given as sampler= or as repeated_augmentation=3; unshuffled the
        # very indices, shuffled the same counts and structure.
        ds = _index_dataset(N)
        for r in range(2):
            want = list(RASampler(ds, 2, r, shuffle=False))
            self.assertEqual(len(want), 128)
            with self.loader(sampler=RASampler(ds, 2, r, shuffle=False), batch_size=32, seed=0) as l:
                self.assertEqual((l.rank, l.world_size, len(l)), (r, 2, 4))
                self.assertEqual(self.epoch(l)[0], want)
            with self.loader(repeated_augmentation=3, rank=r, world_size=2, shuffle=False, batch_size=32, seed=0) as l:
                self.assertEqual(self.epoch(l)[0], want)
        with self.loader(sampler=RASampler(ds, 2, 0), batch_size=32, transform="train", seed=0) as l:
            got = self.epoch(l)[0]
        self.assertEqual(len(got), 128)
        self.assertNotEqual(got, list(RASampler(ds, 2, 0, shuffle=False)))

    def test_distributed_sampler(self):
        # DistributedSampler(drop_last=False) is the loader's rank, world
        # and shuffle (its padding is the server's); its set_epoch picks the
        # epoch. drop_last=True is served as its order, exactly.
        import torch
        from torch.utils.data import DistributedSampler
        ds = _index_dataset(N)
        for r in range(4):
            s = DistributedSampler(ds, num_replicas=4, rank=r, shuffle=False)
            with self.loader(sampler=s, seed=0) as l:
                self.assertEqual((l.rank, l.world_size, l.sampler), (r, 4, s))
                self.assertEqual(self.epoch(l)[0], list(s))
        s = DistributedSampler(ds, num_replicas=3, rank=1, shuffle=True, seed=4)
        with self.loader(sampler=s, transform="train", seed=8) as l, \
                self.loader(rank=1, world_size=3, transform="train", seed=8, epoch=5) as ref:
            s.set_epoch(5)
            self.assertEqual(self.epoch(l)[0], self.epoch(ref)[0])
        torch.manual_seed(2)
        s = DistributedSampler(ds, num_replicas=4, rank=3, drop_last=True, seed=1)
        s.set_epoch(2)
        with self.loader(sampler=s) as l:
            self.assertEqual(self.epoch(l)[0], list(s))
        with self.assertRaisesRegex(ValueError, "rank=0, but sampler=DistributedSampler has rank 1"):
            faster.Loader(self.root, sampler=DistributedSampler(ds, num_replicas=2, rank=1), rank=0)

    def test_refused_by_name(self):
        import json
        from torch.utils.data import BatchSampler, SequentialSampler
        with self.assertRaisesRegex(ValueError, "batch_sampler=BatchSampler is not supported"):
            faster.Loader(self.root, batch_sampler=BatchSampler(SequentialSampler(range(N)), 4, False))
        with self.loader(rank=1, world_size=2, transform="train") as l:
            with self.assertWarnsRegex(UserWarning, "seed=None on 2 ranks without an initialised torch.distributed"):
                self.epoch(l)
            self.assertEqual(l.seed(), 0)
        with self.assertRaisesRegex(ValueError, "mutually exclusive with shuffle"):
            faster.Loader(self.root, sampler=[1, 2], shuffle=True)
        with self.loader(sampler=BatchSampler(SequentialSampler(range(N)), 4, False)) as l:
            with self.assertRaisesRegex(TypeError, r"yielded \[0, 1, 2, 3\] \(list\) at position 0.*batch_sampler="):
                self.epoch(l)
        with self.loader(sampler=[0, N]) as l:
            with self.assertRaisesRegex(ValueError, "yielded index 402 at position 1: the dataset has 402 samples"):
                self.epoch(l)
        with self.loader(sampler=list(range(20))) as l:
            it = l.batches()
            next(it)
            with self.assertRaisesRegex(ValueError, "state_dict\\(\\) within epoch 0 of sampler=list"):
                l.state_dict()
            list(it)
            self.assertEqual(l.state_dict()["epoch"], 1)  # between epochs: fine
        expect = os.environ.get("FASTER_TEST_EXPECT")
        if expect:
            with open(expect) as f:
                shards = json.load(f)["kinds"]["shards"]
            for kw, word in ((dict(sampler=[0, 1]), "sampler=list"), (dict(repeated_augmentation=3), "repeated_augmentation=3")):
                with self.assertRaisesRegex(ValueError, word + " is honoured on indexed data only.*streamed"):
                    faster.Loader(shards, rank=0, world_size=1, **kw)
