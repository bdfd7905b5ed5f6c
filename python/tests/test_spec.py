"""faster.Loader sends its loader as one loader.Spec (JSON) to `faster serve
--spec -`, and the server checks every value once: what it refuses comes
back as a ValueError naming faster.Loader's argument (before: the client
re-encoded its arguments as flags, and a value only the server checks came
back as a ServerError naming the flag, --resolution, --layout, --max-bad).
Run by serve.TestPython (it needs FASTER_BIN and FASTER_TEST_EXPECT)."""
import json
import os
import subprocess
import unittest
from unittest import mock

import faster

EXPECT = os.environ.get("FASTER_TEST_EXPECT")


@unittest.skipUnless(EXPECT, "FASTER_TEST_EXPECT not set: run through `go test ./serve`")
class SpecTest(unittest.TestCase):
    def setUp(self):
        with open(EXPECT) as f:
            self.data = json.load(f)["data"]

    def test_server_checks_name_the_argument(self):
        for kw, words in ((dict(resolution=20000), ("resolution", "20000")),
                          (dict(layout="rgb"), ("layout", "rgb")),
                          (dict(on_error="skip", max_bad="lots"), ("max_bad", "lots")),
                          (dict(world_size=2 ** 21, rank=0), ("world_size",)),
                          (dict(batch_size=0, label_offset=10 ** 12), ("batch_size", "label_offset")),
                          (dict(augment_recipe="torchvision-nope"), ("augment_recipe", "torchvision-nope"))):
            with self.subTest(**{k: str(v) for k, v in kw.items()}):
                with self.assertRaises(ValueError) as cm:
                    faster.Loader(self.data, output="numpy", **kw).close()
                for w in words:
                    self.assertIn(w, str(cm.exception))

    def test_the_spec_is_sent_on_stdin(self):
        sent = {}
        real = subprocess.Popen

        def spy(args, **kw):
            sent["args"] = list(args)
            p = real(args, **kw)
            write = p.stdin.write

            def tee(b):
                sent["spec"] = json.loads(b)
                return write(b)
            p.stdin.write = tee
            return p
        with mock.patch("subprocess.Popen", spy):
            with faster.Loader(self.data, batch_size=3, transform="eval", resolution=24, seed=4, output="numpy",
                               label_offset=0, shuffle=False, augment_recipe="torchvision-v2",
                               rank=1, world_size=2) as loader:
                x, y = next(iter(loader))
        self.assertEqual(x.shape, (3, 3, 24, 24))
        self.assertEqual(sent["args"][-2:], ["--spec", "-"])
        self.assertNotIn("--batch", sent["args"])
        s = sent["spec"]
        self.assertEqual((s["path"], s["batch"], s["transform"], s["resolution"], s["seed"], s["shuffle"],
                          s["world_size"], s["rank"], s["recipe"]),
                         (self.data, 3, "eval", 24, 4, False, 2, 1, {"augment_recipe": "torchvision-v2"}))


if __name__ == "__main__":
    unittest.main()
