"""faster.Loader(device=...): the argument's check, the refusal where
torch.cuda cannot take the batches (before any server starts), the DEVICE
frame and the __cuda_array_interface__ view.
Needs neither torch nor a server nor a GPU (python -m unittest)."""
import json
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
        for dev, want in ((None, None), ("cpu", None), ("cuda", _device.CURRENT), ("cuda:3", 3), (2, 2),
                          ("cuda:0", 0), (types.SimpleNamespace(type="cuda", index=1), 1),
                          (types.SimpleNamespace(type="cuda", index=0), 0),
                          (types.SimpleNamespace(type="cuda", index=None), _device.CURRENT),
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
        self.assertIs(_device.require(_device.CURRENT, t), t, "torch's current GPU: accepted")

    def test_cuda_without_an_index_is_the_current_device(self):
        # As torch reads "cuda": under torchrun each rank sets its own
        # device first, and its loader decodes there, not on GPU 0.
        t = fake_torch(True, 4)
        t.cuda.current_device = lambda: 3
        self.assertEqual(_device.resolve(_device.parse("cuda"), t), 3)
        self.assertEqual(_device.resolve(_device.parse(types.SimpleNamespace(type="cuda", index=None)), t), 3)
        self.assertEqual(_device.resolve(_device.parse("cuda:1"), t), 1)
        # The Loader asks its server for that GPU.
        with mock.patch("subprocess.Popen") as popen, \
                mock.patch.object(_device, "require", lambda o, torch_module=None: t), \
                mock.patch("faster.loader.Loader._attach", side_effect=RuntimeError("stop")):
            popen.return_value.poll.return_value = 0
            popen.return_value.wait.return_value = 0
            popen.return_value.returncode = 0
            with self.assertRaises(RuntimeError):
                faster.Loader("/nonexistent", device="cuda", binary=sys.executable)
        spec = json.loads(popen.return_value.stdin.write.call_args[0][0])
        self.assertEqual(spec["device"], "cuda:3")

    def test_server_finds_the_libraries_beside_torch(self):
        # With device=, the server's LD_LIBRARY_PATH keeps this process's
        # folders first and adds torch's lib/ and its nvidia wheels' after.
        import tempfile
        site = tempfile.mkdtemp(prefix="faster-site-")
        for d in ("torch/lib", "nvidia/cu13/lib", "nvidia/cudnn/lib", "nvidia/empty"):
            os.makedirs(os.path.join(site, d))
        fake = types.ModuleType("torch")
        fake.__file__ = os.path.join(site, "torch", "__init__.py")
        l = faster.Loader.__new__(faster.Loader)
        l.device = 0
        with mock.patch.dict(sys.modules, {"torch": fake}), mock.patch.dict(os.environ, {"LD_LIBRARY_PATH": "/mine"}):
            env = l._server_env()
        self.assertEqual(env["LD_LIBRARY_PATH"].split(os.pathsep),
                         ["/mine", os.path.join(site, "torch", "lib"), os.path.join(site, "nvidia", "cu13", "lib"),
                          os.path.join(site, "nvidia", "cudnn", "lib")])
        l.device = None
        self.assertIsNone(l._server_env(), "without device=, the server inherits the environment")

    def test_loader_refuses_before_starting_a_server(self):
        # torch without a GPU (as here; on a GPU machine the check is given
        # a torch that has none): no server starts.
        real = _device.require
        with mock.patch("subprocess.Popen") as popen, \
                mock.patch.object(_device, "require", lambda o, t=None: real(o, fake_torch(False))):
            with self.assertRaises(RuntimeError) as cm:
                faster.Loader("/nonexistent", device="cuda")
            popen.assert_not_called()
        self.assertIn("device='cuda'", str(cm.exception))
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
