"""device=: the client's whole device path without a GPU, against the host
stand-in of the server's device ring (serve's TestPythonDeviceStandIn
starts this with FASTER_STANDIN_BIN, a server whose batch-decode stage
decodes on the CPU into shared-memory buffers and sends their names in the
DEVICE frame): faster.Loader reads the device hello and frame, views each
buffer once (DeviceRing), yields batches from them and hands each slot back
(_hand_back). Epochs 0 and 1 are the CPU path's batches (the Go loader's
digests); an early break leaves the next epoch whole."""
import json
import os
import unittest

import faster

from test_loader import digest

BIN = os.environ.get("FASTER_STANDIN_BIN")
EXPECT = os.environ.get("FASTER_STANDIN_EXPECT")


class DeviceStandInTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        with open(EXPECT) as f:
            cls.want = json.load(f)

    def loader(self):
        w = self.want
        return faster.Loader(w["data"], batch_size=w["batch"], resolution=w["resolution"], transform="train",
                             seed=w["seed"], layout="u8-hwc", output="numpy", num_workers=2, binary=BIN)

    def test_epochs_are_the_cpu_paths(self):
        with self.loader() as l:
            self.assertEqual(l.hello.get("device"), "cpu")
            self.assertEqual(l.hello.get("handles"), faster._protocol.HANDLE_SHM)
            self.assertIsNotNone(l._dev)
            for e in range(2):
                l.set_epoch(e)
                got = [digest(b.images, b.labels, b.keys) for b in l.batches()]
                self.assertEqual(got, self.want["epochs"][e], "epoch %d differs from the CPU path's" % e)

    def test_early_break_then_whole_epoch(self):
        with self.loader() as l:
            for i, _ in enumerate(l.batches()):
                if i == 1:
                    break
            l.set_epoch(1)
            got = [digest(b.images, b.labels, b.keys) for b in l.batches()]
            self.assertEqual(got, self.want["epochs"][1], "an early break lost slots or changed what is served")


if not (BIN and EXPECT):
    # Not started by `go test ./serve -run TestPythonDeviceStandIn`: no test
    # here (not a skip, which TestPython under FASTER_REQUIRE_DATA=1 fails).
    del DeviceStandInTest

if __name__ == "__main__":
    unittest.main()
