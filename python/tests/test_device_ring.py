"""device=: the server's batch buffers as the DEVICE frame hands them over
(faster._device.DeviceRing) and the ownership of their slots, without a GPU:
the host stand-in's handles (shared-memory files, the kind Go's
TestServeDeviceStandIn serves) mapped and viewed, refusals of a malformed
frame, and Loader._hand_back owning each device slot behind a stand-in
fence as the pinned ring does. Needs neither torch nor a server."""
import collections
import os
import sys
import tempfile
import unittest

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

import faster  # noqa: E402
from faster import _device  # noqa: E402
from faster import _protocol as P  # noqa: E402
from faster import loader as L  # noqa: E402


def hello(slots, batch=2, shape=(2, 2, 3), dtype="uint8", handles=P.HANDLE_SHM):
    row = int(np.prod(shape)) * np.dtype(dtype).itemsize
    return {"slots": slots, "batch": batch, "shape": list(shape), "dtype": dtype, "row_bytes": row,
            "device": "cpu", "handles": handles}


class ShmHandles:
    """Shared-memory files standing in for device buffers, each filled
    with its slot's byte pattern."""

    def __init__(self, n, size):
        self.dir = tempfile.mkdtemp()
        self.names = []
        for i in range(n):
            name = "faster-devtest-%d-%d" % (os.getpid(), i)
            with open(os.path.join(self.dir, name), "wb") as f:
                f.write(bytes((i * 31 + j) % 251 for j in range(size)))
            self.names.append(name.encode().ljust(P.IPC_HANDLE_BYTES, b"\0"))

    def close(self):
        for n in self.names:
            os.unlink(os.path.join(self.dir, n.rstrip(b"\0").decode()))
        os.rmdir(self.dir)


class Fences:
    """Stand-in for CUDA events: a fence passes when the test says so, or
    when waited for."""

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

    def view(self, i, shape, dtype):
        return np.full(shape, i, dtype)

    def close(self):
        self.closed = True


class DeviceRingTest(unittest.TestCase):
    def test_shm_handles_viewed_in_place(self):
        h = hello(3)
        size = h["batch"] * h["row_bytes"]
        files = ShmHandles(3, size + 64)
        try:
            ring = _device.DeviceRing(h, P.device_frame(0, size + 64, files.names), shm_dir=files.dir)
            self.assertEqual(len(ring.images), 3)
            for i, im in enumerate(ring.images):
                self.assertEqual(im.shape, (2, 2, 2, 3))
                want = np.array([(i * 31 + j) % 251 for j in range(size)], np.uint8).reshape(im.shape)
                np.testing.assert_array_equal(im, want)
            self.assertIsNone(ring.device)
            self.assertTrue(ring.passed(ring.fence()), "the host stand-in has nothing to fence")
            ring.close()
        finally:
            files.close()

    def test_malformed_frames_refused(self):
        h = hello(2)
        size = h["batch"] * h["row_bytes"]
        files = ShmHandles(2, size)
        try:
            frame = P.device_frame(0, size, files.names)
            with self.assertRaisesRegex(ValueError, "2 slots, the hello 3"):
                _device.DeviceRing(hello(3), frame, shm_dir=files.dir)
            with self.assertRaisesRegex(ValueError, "less than a batch"):
                _device.DeviceRing(h, P.device_frame(0, size - 1, files.names), shm_dir=files.dir)
            with self.assertRaisesRegex(ValueError, "kind 'dlpack'"):
                _device.DeviceRing(dict(h, handles="dlpack"), frame, shm_dir=files.dir)
            with self.assertRaisesRegex(ValueError, "not a file under"):
                _device.DeviceRing(h, P.device_frame(0, size, [b"../etc".ljust(64, b"\0")] * 2), shm_dir=files.dir)
            with self.assertRaisesRegex(RuntimeError, "torch is not loaded"):
                _device.DeviceRing(dict(h, handles=P.HANDLE_CUDA), frame)
            with self.assertRaises(FileNotFoundError):
                _device.DeviceRing(h, P.device_frame(0, size, [b"faster-devtest-none".ljust(64, b"\0")] * 2),
                                   shm_dir=files.dir)
        finally:
            files.close()


class HandBackTest(unittest.TestCase):
    """Loader._hand_back with a device ring: a slot is handed back ('F')
    only once the fence recorded when the next batch was asked for has
    passed, waited for when the server would otherwise run short, and at
    the epoch's end."""

    def loader(self, slots):
        fences = Fences()
        h = hello(slots)
        ring = _device.DeviceRing(h, P.device_frame(0, 4096, [b"x" * 64] * slots), slots=fences)
        l = object.__new__(faster.Loader)
        l._closed = True  # nothing to close: no server
        l._ring, l._dev, l._depth = None, ring, max(1, min(4, slots - 1))
        freed = []
        l._send = lambda typ, payload=b"": freed.append(int.from_bytes(bytes(payload), "little")) \
            if typ == P.FREE else None
        return l, fences, freed

    def test_held_behind_fences(self):
        l, fences, freed = self.loader(slots=3)  # depth 2: the stage keeps one slot
        run = L._Run(0)
        run.held = 0
        l._hand_back(run)  # asking for batch 1: slot 0 behind fence 0
        self.assertEqual((freed, len(fences.made)), ([], 1))
        run.held = 1
        l._hand_back(run)  # two pending = depth: the oldest waited for, handed back
        self.assertEqual(freed, [0])
        self.assertTrue(fences.made[0]["waited"])
        self.assertFalse(fences.made[1]["waited"])
        fences.made[1]["passed"] = True
        run.held = 2
        l._hand_back(run)  # fence 1 passed: slot 1 back without a wait; slot 2 pending
        self.assertEqual(freed, [0, 1])
        self.assertFalse(fences.made[1]["waited"])
        self.assertEqual([s for s, _ in run.pending], [2])
        l._hand_back(run, every=True)  # the epoch's end
        self.assertEqual(freed, [0, 1, 2])
        self.assertTrue(all(f["passed"] for f in fences.made))
        self.assertEqual(run.pending, collections.deque())

    def test_depth_below_the_ring(self):
        # slots= above the device ring: the client still leaves the stage one.
        l, _, freed = self.loader(slots=2)
        self.assertEqual(l._depth, 1)
        run = L._Run(0)
        run.held = 0
        l._hand_back(run)
        self.assertEqual(freed, [0], "with one slot to hold, the previous is waited for at once")


if __name__ == "__main__":
    unittest.main()
