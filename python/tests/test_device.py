"""faster.Loader(device=...): the argument's check, the refusal where
torch.cuda cannot take the batches (before any server starts), the DEVICE
frame and the __cuda_array_interface__ view.
Needs neither torch nor a server nor a GPU (python -m unittest)."""
import os
import struct
import sys
import types
import unittest
from unittest import mock

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

import faster  # noqa: E402
from faster import _device  # noqa: E402
from faster import _protocol as P  # noqa: E402


def fake_torch(available, count=1):
    cuda = types.SimpleNamespace(is_available=lambda: available, device_count=lambda: count)
    return types.SimpleNamespace(cuda=cuda)


class DeviceArgumentTest(unittest.TestCase):
    def test_parse(self):
        for dev, want in ((None, None), ("cpu", None), ("cuda", 0), ("cuda:3", 3), (2, 2),
                          (types.SimpleNamespace(type="cuda", index=1), 1),
                          (types.SimpleNamespace(type="cuda", index=None), 0),
                          (types.SimpleNamespace(type="cpu", index=None), None)):
            with self.subTest(dev=dev):
                self.assertEqual(_device.parse(dev), want)
        for bad in ("gpu", "cuda:", "cuda:x", "cuda:-1", "CUDA", -1, True, 1.5,
                    types.SimpleNamespace(type="mps", index=0)):
            with self.subTest(bad=bad):
                with self.assertRaises(ValueError) as cm:
                    _device.parse(bad)
                self.assertIn("device=", str(cm.exception))

    def test_refused_without_torch_cuda(self):
        with self.assertRaises(RuntimeError) as cm:
            _device.require(0, fake_torch(False))
        self.assertIn("torch.cuda is not available", str(cm.exception))
        with self.assertRaises(RuntimeError) as cm:
            _device.require(2, fake_torch(True, 2))
        self.assertIn("torch sees 2 GPU(s)", str(cm.exception))
        t = fake_torch(True, 2)
        self.assertIs(_device.require(1, t), t, "a GPU torch sees: accepted")

    def test_loader_refuses_before_starting_a_server(self):
        # torch without a GPU (as here; on a GPU machine the check is given
        # a torch that has none): no server starts.
        real = _device.require
        with mock.patch("subprocess.Popen") as popen, \
                mock.patch.object(_device, "require", lambda o, t=None: real(o, fake_torch(False))):
            with self.assertRaises(RuntimeError) as cm:
                faster.Loader("/nonexistent", device="cuda")
            popen.assert_not_called()
        self.assertIn("device='cuda:0'", str(cm.exception))
        with self.assertRaises(ValueError):
            faster.Loader("/nonexistent", device="tpu")

    def test_cpu_share_needs_a_device(self):
        # cpu_share= is a share of the GPU stage's batches: refused on the
        # CPU path, naming it, before any server starts.
        with mock.patch("subprocess.Popen") as popen:
            with self.assertRaises(ValueError) as cm:
                faster.Loader("/nonexistent", cpu_share=0.25)
            popen.assert_not_called()
        self.assertIn("cpu_share=0.25", str(cm.exception))
        self.assertIn("device=", str(cm.exception))

    def test_numpy_output_refused_with_a_device(self):
        # Where torch has CUDA (require passes): the GPU's batches are torch
        # tensors, so output="numpy" is refused before a server starts.
        with mock.patch("subprocess.Popen") as popen, mock.patch.object(_device, "require"):
            with self.assertRaises(ValueError) as cm:
                faster.Loader("/nonexistent", device="cuda:1", output="numpy")
            popen.assert_not_called()
        self.assertIn("output='numpy'", str(cm.exception))


class DeviceFrameTest(unittest.TestCase):
    def test_round_trip(self):
        handles = [bytes([i]) * P.IPC_HANDLE_BYTES for i in range(7)]
        payload = P.device_frame(1, 256 * 224 * 224 * 3, handles)
        self.assertEqual(len(payload), P.DEVICE_FIXED.size + 7 * 64)
        self.assertEqual(P.parse_device(payload), (1, 256 * 224 * 224 * 3, handles))
        self.assertEqual(P.frame(P.DEVICE, payload)[4:5], b"G")

    def test_refuses_damage(self):
        good = P.device_frame(0, 1024, [b"\0" * 64] * 2)
        for bad, words in ((good[:10], "shorter"), (good[:-1], "need"), (good + b"x", "need"),
                           (struct.pack("<IIQ", 0, 0, 1024), "0 slots"),
                           (struct.pack("<IIQ", 0, 2, 0) + b"\0" * 128, "of 0 bytes")):
            with self.subTest(words=words):
                with self.assertRaises(ValueError) as cm:
                    P.parse_device(bad)
                self.assertIn(words, str(cm.exception))
        with self.assertRaises(ValueError):
            P.device_frame(0, 1024, [b"\0" * 63])
        with self.assertRaises(ValueError):
            P.device_frame(0, 1024, [])

    def test_frame_types_are_distinct(self):
        types_ = [P.HELLO, P.READY, P.END, P.ERROR, P.REFUSED, P.ATTACH, P.EPOCH, P.FREE, P.CANCEL, P.SEED, P.ORDER, P.DEVICE]
        self.assertEqual(len(set(types_)), len(types_))


class CudaArrayTest(unittest.TestCase):
    def test_interface(self):
        a = _device.CudaArray(0x7f0000001000, (256, 3, 224, 224), "float32")
        ai = a.__cuda_array_interface__
        self.assertEqual(ai, {"shape": (256, 3, 224, 224), "typestr": "<f4", "data": (0x7f0000001000, False),
                              "version": 3, "strides": None, "stream": None})
        self.assertEqual(_device.CudaArray(1, (2, 4, 4, 3), "uint8").__cuda_array_interface__["typestr"], "|u1")
        for bad in ((0, (1,), "uint8"), (1, (1,), "float64"), (1, (-1,), "uint8")):
            with self.assertRaises(ValueError):
                _device.CudaArray(*bad)


if __name__ == "__main__":
    unittest.main()
