"""Arguments are checked before any server starts (no binary needed)."""
import unittest

import faster


class ArgumentTest(unittest.TestCase):
    def test_bad_sizes_are_refused(self):
        # Before: batch_size=0 was served at 256 and len() raised
        # ZeroDivisionError.
        for kw in (dict(batch_size=0), dict(batch_size=-3), dict(batch_size=2.5), dict(batch_size=True),
                   dict(resolution=0), dict(slots=0), dict(workers=-1)):
            with self.subTest(**kw):
                with self.assertRaises(ValueError) as cm:
                    faster.Loader("/nonexistent", **kw)
                self.assertIn(next(iter(kw)), str(cm.exception))


    def test_types_are_checked_before_any_server(self):
        # Before: split=None was a raw TypeError from subprocess, and
        # set_epoch(-1) killed the session with a protocol error. (split=None
        # is now the default: a dataset object's own split, else "train".)
        for kw, word in ((dict(split=3), "split"), (dict(epoch=-1), "epoch"), (dict(seed=-2), "seed"),
                         (dict(layout=3), "layout"), (dict(label_offset="x"), "label_offset")):
            with self.subTest(**kw):
                with self.assertRaisesRegex(ValueError, word):
                    faster.Loader("/nonexistent", **kw)


if __name__ == "__main__":
    unittest.main()
