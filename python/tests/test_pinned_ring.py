"""pin_memory=True's pinned ring (issue 38, item 3): the ownership of the
shared-memory slots, with a stand-in for CUDA's events.

On a CUDA machine the ring is registered with CUDA and each batch is yielded
where it lies; a slot goes back to the server only once the work queued on
the current stream when the next batch was asked for (the batch's
.cuda(non_blocking=True) copy) has finished. Here the fences are a stand-in
whose passing the test decides: a slot behind a fence that has not passed is
not handed back (the server cannot overwrite it), is waited for when every
slot is pending, and at the epoch's end or an early break; what is served is
unchanged. The registration itself and its copy speed need the GPU:
bench/gpu_pinned.py, prepared for the H200 machine, not yet run there."""
import json
import unittest

import numpy as np

import faster

from test_loader import EXPECT, digest


class Fences:
    """Stand-in for _PinnedRing: fences pass when the test says so, or
    when waited for (as CUDA's Event.synchronize returns once it has)."""

    def __init__(self):
        self.made = []
        self.closed = False

    def fence(self):
        f = {"n": len(self.made), "passed": False, "waited": False}
        self.made.append(f)
        return f

    @staticmethod
    def passed(f):
        return f["passed"]

    @staticmethod
    def wait(f):
        f["waited"] = f["passed"] = True

    def close(self):
        self.closed = True


@unittest.skipUnless(EXPECT, "FASTER_TEST_EXPECT not set: run through `go test ./serve`")
class PinnedRingTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        with open(EXPECT) as f:
            cls.data = json.load(f)["data"]

    def loader(self, slots=2):
        return faster.Loader(self.data, batch_size=2, resolution=16, transform="eval", shuffle=False, seed=3,
                             num_workers=1, slots=slots, output="numpy")

    @staticmethod
    def record_frees(l):
        """The slots the client hands back, in order, as sent."""
        freed, send = [], l._send

        def spy(typ, payload=b""):
            if typ == faster._protocol.FREE:
                freed.append(int.from_bytes(bytes(payload), "little"))
            return send(typ, payload)
        l._send = spy
        return freed

    def slot_of(self, l, b):
        return next(i for i, (im, _) in enumerate(l._slots) if np.shares_memory(im, b.images))

    def test_a_slot_is_held_until_its_fence_passes(self):
        with self.loader() as l:
            ring = l._ring = Fences()
            freed = self.record_frees(l)
            it = l.batches()
            b0 = next(it)
            s0 = self.slot_of(l, b0)
            b1 = next(it)  # batch 0's slot behind fence 0, not passed: kept
            s1 = self.slot_of(l, b1)
            self.assertEqual(len(ring.made), 1)
            self.assertEqual(freed, [], "a slot handed back before its fence passed")
            next(it)  # as many pending as slots=2: the oldest is waited for, then handed back
            self.assertTrue(ring.made[0]["waited"], "slots= pending and none waited for")
            self.assertFalse(ring.made[1]["waited"])
            self.assertEqual(freed, [s0])
            ring.made[1]["passed"] = True  # batch 1's copy finished: handed back without a wait
            next(it)
            self.assertEqual(freed, [s0, s1])
            self.assertFalse(ring.made[1]["waited"])
            self.assertFalse(ring.made[2]["waited"])
            rest = list(it)  # the epoch's end waits for every fence left
            self.assertTrue(all(f["passed"] for f in ring.made))
            self.assertEqual(len(freed), 4 + len(rest))
            self.assertEqual(4 + len(rest), len(l))
        self.assertTrue(ring.closed)

    def test_the_slot_is_not_overwritten_while_owned(self):
        # With three slots, batches 1 and 2 come while batch 0's slot is
        # owned; its pixels are batch 0's until its fence has passed.
        with self.loader(slots=3) as l:
            ring = l._ring = Fences()
            freed = self.record_frees(l)
            it = l.batches()
            b0 = next(it)
            kept = b0.images.copy()
            next(it)
            next(it)
            np.testing.assert_array_equal(b0.images, kept)
            self.assertEqual(freed, [])
            self.assertFalse(ring.made[0]["waited"])
            list(it)

    def test_early_break_and_next_epoch(self):
        with self.loader() as plain:
            want = [digest(b.images, b.labels, b.keys) for b in plain.batches()]
        with self.loader() as l:
            ring = l._ring = Fences()
            for i, _ in enumerate(l.batches()):
                if i == 2:
                    break  # two slots pending: waited for and handed back as the run ends
            l.set_epoch(0)
            got = [digest(b.images, b.labels, b.keys) for b in l.batches()]
            self.assertEqual(got, want, "the fences changed what is served, or slots were lost")
            self.assertTrue(all(f["passed"] for f in ring.made))


if __name__ == "__main__":
    unittest.main()
