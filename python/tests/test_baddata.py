"""faster.Loader takes the same damaged-sample policy as `faster bench
load`: stop (a ServerError naming the file) or skip, count and quarantine.
Run by serve.TestPython like test_loader.py (it needs FASTER_BIN and the
test tree named in FASTER_TEST_EXPECT)."""
import json
import os
import shutil
import tempfile
import unittest

import faster

EXPECT = os.environ.get("FASTER_TEST_EXPECT")


@unittest.skipUnless(EXPECT, "FASTER_TEST_EXPECT not set: run through `go test ./serve`")
class BadDataPolicy(unittest.TestCase):
    def setUp(self):
        with open(EXPECT) as f:
            src = json.load(f)["data"]
        self.tmp = tempfile.mkdtemp(prefix="faster-baddata-")
        self.addCleanup(shutil.rmtree, self.tmp)
        self.data = os.path.join(self.tmp, "tree")
        shutil.copytree(src, self.data)
        cls = sorted(d for d in os.listdir(self.data) if os.path.isdir(os.path.join(self.data, d)))[0]
        self.bad = os.path.join(self.data, cls, "zz_corrupt.jpg")
        with open(self.bad, "wb") as f:
            f.write(b"\xff\xd8\xff\xe0 not a JPEG at all")
        self.total = sum(len(fs) for _, _, fs in os.walk(self.data))

    def keys(self, loader):
        out = []
        for b in loader.batches():
            out += b.keys[:len(b.keys) - b.repeats]
        return out

    def test_stop_names_the_file(self):
        loader = faster.Loader(self.data, batch_size=4, transform="eval", resolution=16, output="numpy")
        try:
            with self.assertRaises(faster.ServerError) as cm:
                self.keys(loader)
            self.assertIn("zz_corrupt.jpg", str(cm.exception))
        finally:
            loader.close()

    def test_skip_counts_and_quarantines(self):
        q = os.path.join(self.tmp, "bad.jsonl")
        loader = faster.Loader(self.data, batch_size=4, transform="eval", resolution=16, output="numpy",
                               on_error="skip", quarantine=q)
        try:
            keys = self.keys(loader)
        finally:
            loader.close()
        self.assertEqual(len(keys), self.total - 1)
        self.assertNotIn(os.path.relpath(self.bad, self.data), keys)
        with open(q) as f:
            listed = [json.loads(line) for line in f]
        self.assertEqual([os.path.basename(x["path"]) for x in listed], ["zz_corrupt.jpg"])

    def test_ranks_keep_their_own_lists(self):
        # Ranks given one quarantine= write FILE.rankN each: together they
        # list the bad sample once, and no rank overwrites another's list.
        q = os.path.join(self.tmp, "bad.jsonl")
        keys = []
        for rank in range(2):
            loader = faster.Loader(self.data, batch_size=2, transform="eval", resolution=16, output="numpy",
                                   rank=rank, world_size=2, on_error="skip", quarantine=q)
            try:
                keys += self.keys(loader)
            finally:
                loader.close()
        listed = []
        for rank in range(2):
            with open("%s.rank%d" % (q, rank)) as f:
                listed += [json.loads(line) for line in f]
        self.assertEqual([os.path.basename(x["path"]) for x in listed], ["zz_corrupt.jpg"])
        self.assertEqual(sorted(set(keys)), sorted(keys))
        self.assertEqual(len(keys), self.total - 1)

    def test_budget_stops(self):
        loader = faster.Loader(self.data, batch_size=4, transform="eval", resolution=16, output="numpy",
                               on_error="skip", max_bad=0)
        try:
            with self.assertRaises(faster.ServerError):
                self.keys(loader)
        finally:
            loader.close()

    def test_arguments(self):
        with self.assertRaises(ValueError):
            faster.Loader(self.data, on_error="ignore")
        with self.assertRaises(ValueError):
            faster.Loader(self.data, quarantine="x.jsonl")


if __name__ == "__main__":
    unittest.main()
