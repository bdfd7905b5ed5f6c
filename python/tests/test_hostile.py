"""Hostile use of faster.Loader (issue 31): what used to pass silently or
take the machine now fails clearly. Run by serve.TestPython."""
import json
import os
import shutil
import tempfile
import unittest
import warnings

import faster

from test_loader import EXPECT


@unittest.skipUnless(EXPECT, "FASTER_TEST_EXPECT not set: run through `go test ./serve`")
class HostileTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        with open(EXPECT) as f:
            cls.data = json.load(f)["data"]

    def loader(self, **kw):
        return faster.Loader(self.data, batch_size=4, resolution=16, num_workers=1, output="numpy", **kw)

    def test_workers_are_capped(self):
        # Before: workers=10**9 started a server that took all the memory.
        cap = 4 * (os.cpu_count() or 1)
        for key in ("num_workers", "workers"):
            with warnings.catch_warnings(record=True) as w:
                warnings.simplefilter("always")
                with faster.Loader(self.data, batch_size=4, resolution=16, output="numpy", **{key: 10 ** 9}) as l:
                    self.assertEqual(l.hello["workers"], cap, key)  # what the server opened its loader with
                    self.assertEqual(sum(1 for _ in l), len(l))
            self.assertTrue(any("using %d" % cap in str(x.message) for x in w), [str(x.message) for x in w])

    def test_nested_iteration_is_refused(self):
        # Before: the inner loop silently ended the outer epoch (2 of 9 batches).
        with self.loader() as l:
            outer = 0
            with self.assertRaisesRegex(RuntimeError, "ended by a newer iteration"):
                for _ in l:
                    outer += 1
                    for _ in l:
                        pass
            self.assertEqual(outer, 1)
            # The loader goes on with the next epoch.
            self.assertEqual(sum(1 for _ in l), len(l))

    def test_negative_epoch_is_refused_and_the_session_lives(self):
        # Before: set_epoch(-1) reached the server, which ended the session.
        with self.loader() as l:
            with self.assertRaisesRegex(ValueError, "set_epoch"):
                l.set_epoch(-1)
            self.assertEqual(sum(1 for _ in l), len(l))

    def test_data_path_starting_with_a_dash(self):
        # Before: "-data" reached the server as an unknown flag.
        d = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, d)
        link = os.path.join(d, "-data")
        os.symlink(self.data, link)
        cwd = os.getcwd()
        os.chdir(d)
        self.addCleanup(os.chdir, cwd)
        with faster.Loader("-data", batch_size=4, resolution=16, num_workers=1, output="numpy") as l:
            self.assertEqual(sum(1 for _ in l), len(l))

    def test_quarantine_directory_is_refused_up_front(self):
        # Before: accepted, and the list was lost when the server exited.
        d = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, d)
        with self.assertRaisesRegex(faster.ServerError, "not a regular file"):
            self.loader(on_error="skip", quarantine=d)

    def test_close_reports_a_lost_quarantine_list(self):
        # Before: close() ignored the server's exit status.
        d = tempfile.mkdtemp()
        l = self.loader(on_error="skip", quarantine=os.path.join(d, "bad.jsonl"))
        self.assertEqual(sum(1 for _ in l), len(l))
        shutil.rmtree(d)  # the list cannot be written any more
        with self.assertRaisesRegex(faster.ServerError, "exited with status 1 when the loader closed.*quarantine"):
            l.close()


if __name__ == "__main__":
    unittest.main()
