"""device="cuda" end to end on a GPU (issue 38 §2; PREPARED, not yet run
on a GPU): the server decodes on the GPU (the loader's nvJPEG stage) and
hands its batch buffers over by CUDA IPC; the loader yields torch CUDA
tensors viewing them. Compared with the CPU path's batches: the same keys
and labels, the pixels within docs/pipeline.md's bound for the GPU stage at
full_decode=True (at most 12 levels on a byte, 1.0 on average per row),
for uint8 NHWC and float32 NCHW; an early break and the epoch after it.
Absent without torch CUDA (no test, not a skip); fails instead under FASTER_REQUIRE_GPU=1 (the
GPU machine's check, scripts/h200.sh). Needs the photographs of
FASTER_TEST_EXPECT (run through `go test ./serve -run TestPython`)."""
import importlib.util
import json
import os
import unittest

import numpy as np

import faster

from test_loader import EXPECT

REQUIRE_GPU = os.environ.get("FASTER_REQUIRE_GPU") == "1"


def have_cuda():
    if importlib.util.find_spec("torch") is None:
        return False
    import torch
    return torch.cuda.is_available()


def need_gpu(cls):
    """cls where torch has CUDA; a failing test under FASTER_REQUIRE_GPU=1
    without it; else nothing at all (None: no test, so no skip, which
    TestPython under FASTER_REQUIRE_DATA=1 would count as a failure)."""
    if have_cuda():
        return cls
    if REQUIRE_GPU:
        class Failing(unittest.TestCase):
            def test_gpu(self):
                self.fail("FASTER_REQUIRE_GPU=1 and torch sees no CUDA device")
        Failing.__name__ = cls.__name__
        return Failing
    return None


@need_gpu
@unittest.skipUnless(EXPECT, "FASTER_TEST_EXPECT not set: run through `go test ./serve`")
class DeviceLoaderTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        with open(EXPECT) as f:
            cls.data = json.load(f)["data"]

    def loader(self, layout, device=None):
        return faster.Loader(self.data, batch_size=4, resolution=32, transform="eval", shuffle=False, seed=3,
                             num_workers=2, layout=layout, full_decode=True, device=device)

    def check_layout(self, layout, dtype, scale):
        import torch
        with self.loader(layout) as cpu:
            want = [(b.images.numpy().copy(), b.labels.numpy().copy(), list(b.keys)) for b in cpu.batches()]
        with self.loader(layout, device="cuda") as gpu:
            got = 0
            for b, (wim, wlb, wkeys) in zip(gpu.batches(), want):
                self.assertEqual(b.images.device.type, "cuda")
                self.assertEqual(b.images.dtype, dtype)
                self.assertEqual(tuple(b.images.shape), wim.shape)
                self.assertEqual(list(b.keys), wkeys)
                np.testing.assert_array_equal(b.labels.cpu().numpy(), wlb)
                torch.cuda.current_stream().synchronize()
                d = np.abs(b.images.cpu().numpy().astype(np.float64) - wim.astype(np.float64)) * scale
                self.assertLessEqual(d.max(), 12, "a byte more than 12 levels from the CPU path's")
                self.assertLessEqual(d.reshape(len(wkeys), -1).mean(axis=1).max(), 1.0, "a row's mean over 1 level")
                got += 1
            self.assertEqual(got, len(want))

    def test_u8_hwc(self):
        import torch
        self.check_layout("u8-hwc", torch.uint8, 1.0)

    def test_f32_chw(self):
        import torch
        # Normalised floats: one level is 1/255 over the channel's std (at most ~0.229 in ImageNet's).
        self.check_layout("f32-chw", torch.float32, 255.0 * 0.229)

    def test_early_break_and_next_epoch(self):
        with self.loader("u8-hwc", device="cuda") as gpu:
            full = [list(b.keys) for b in gpu.batches()]
            gpu.set_epoch(0)
            for i, b in enumerate(gpu.batches()):
                if i == 1:
                    break
            gpu.set_epoch(0)
            again = [list(b.keys) for b in gpu.batches()]
            self.assertEqual(again, full, "an early break lost slots or changed what is served")


if __name__ == "__main__":
    unittest.main()
