"""Saved positions that cannot be served (issue 41 item 10): load_state_dict
raises ValueError naming the field, the server refuses what slips past it
without ending the session, and a state names the data it was saved on.
Run by serve.TestPython."""
import json
import os
import shutil
import tempfile
import unittest

import faster
from faster import _protocol as P

from test_loader import EXPECT


@unittest.skipUnless(EXPECT, "FASTER_TEST_EXPECT not set: run through `go test ./serve`")
class StateTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        with open(EXPECT) as f:
            cls.data = json.load(f)["data"]

    def loader(self, data=None, **kw):
        args = dict(batch_size=4, resolution=16, num_workers=1, output="numpy", seed=3)
        args.update(kw)
        return faster.Loader(data or self.data, **args)

    def mid_state(self, l, steps=2):
        it = l.batches()
        for _ in range(steps):
            next(it)
        st = json.loads(json.dumps(l.state_dict()))
        it.close()
        return st

    def test_epoch_out_of_range_is_refused_and_the_session_lives(self):
        # Before: epoch -1 or 2**62 was accepted, and the server ended the
        # session at the next iteration (ServerError, no more batches).
        with self.loader() as l:
            good = self.mid_state(l)
            whole = l.state_dict()
            whole.pop("segments", None)
            for epoch in (-1, 2 ** 62, P.MAX_EPOCH + 1, 1.5, "2", None, True):
                for base in (good, whole):
                    st = dict(base, epoch=epoch)
                    with self.assertRaisesRegex(ValueError, r"\['epoch'\] = %s" % repr(epoch).replace("(", r"\(")):
                        l.load_state_dict(st)
            for epoch in (-1, 2 ** 62):
                with self.assertRaisesRegex(ValueError, "set_epoch"):
                    l.set_epoch(epoch)
            l.set_epoch(0)
            self.assertEqual(sum(1 for _ in l), len(l))
        with self.assertRaisesRegex(ValueError, "epoch"):
            self.loader(epoch=2 ** 62)

    def test_malformed_states_raise_value_error_naming_the_field(self):
        # Before: KeyError, TypeError or AttributeError from inside the
        # client, or accepted and the server's session ended.
        with self.loader() as l:
            st = self.mid_state(l)
            seg = st["segments"][0]
            cases = [
                ("x", "state has type str"),
                ([], "a list of 0 states"),
                ({"epoch": 0}, "has no 'version'"),
                (dict(st, seed=-1), r"\['seed'\] = -1"),
                (dict(st, seed="3"), r"\['seed'\] = '3'"),
                (dict(st, shuffle="yes"), r"\['shuffle'\] = 'yes'"),
                (dict(st, samples=None), r"\['samples'\] = None"),
                (dict(st, fingerprint=5), r"\['fingerprint'\] = 5"),
                (dict(st, segments="abc"), r"\['segments'\] = 'abc'"),
                (dict(st, segments=[{"world": 2}]), r"\['segments'\]\[0\] = "),
                (dict(st, segments=[dict(seg, world=0, consumed=[])]), r"\['segments'\]\[0\]\['world'\] = 0"),
                (dict(st, segments=[dict(seg, consumed=[1, 2])]), r"\['segments'\]\[0\]\['consumed'\] = '2 counts'"),
                (dict(st, segments=[dict(seg, consumed=["a"])]), r"\['segments'\]\[0\]\['consumed'\]\[0\] = 'a'"),
                (dict(st, segments=[dict(seg, consumed=[-2])]), r"\['consumed'\]\[0\] = -2"),
                (dict(st, segments=[dict(seg, consumed=[10 ** 6])]), r"\['consumed'\]\[0\] = 1000000"),
                (dict(st, segments=[dict(seg, consumed=[-1])]), "at least one rank's count"),
                (dict(st, segments=[dict(seg, steps=-5)]), r"\['steps'\] = -5"),
                (dict(st, segments=[dict(seg, batch=-1)]), r"\['batch'\] = -1"),
                (dict(st, segments=[seg] * (P.MAX_SEGMENTS + 1)), "at most %d segments" % P.MAX_SEGMENTS),
                ([st, dict(st, epoch=st["epoch"] + 1)], r"state\[1\]\['epoch'\]"),
                ([st, dict(st, segments=[])], r"state\[1\]'s segments"),
            ]
            for bad, want in cases:
                with self.subTest(want=want):
                    with self.assertRaisesRegex(ValueError, want):
                        l.load_state_dict(bad)
            # The loader goes on, and the good state still loads.
            l.load_state_dict(st)
            self.assertEqual(sum(1 for _ in l), len(l) - 2)

    def test_server_refuses_what_the_client_cannot_check(self):
        # A count within the dataset but past the rank's part of the order
        # passes the client's checks; the server refuses it ('N') and the
        # session goes on (before: the server exited).
        with self.loader() as l:
            st = self.mid_state(l)
            n = st["samples"]
            forged = dict(st, segments=[{"world": 2, "consumed": [n, 0]}])
            l.load_state_dict(forged)
            with self.assertRaisesRegex(ValueError, "refused epoch %d from the loaded state: .*rank 0 consumed %d" % (st["epoch"], n)):
                list(l.batches())
            self.assertEqual(l.epoch, st["epoch"])  # nothing ran
            self.assertEqual(sum(1 for _ in l), len(l))
            self.assertIsNone(l._proc.poll(), "the server exited")

    def test_state_of_other_data_of_the_same_size_is_refused(self):
        # Before: accepted (same size, seed and shuffle), serving "the rest"
        # of another dataset's order.
        tmp = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, tmp)
        moved, other = os.path.join(tmp, "moved"), os.path.join(tmp, "other")
        shutil.copytree(self.data, moved)
        shutil.copytree(self.data, other)
        cls = sorted(os.listdir(other))[0]
        name = sorted(os.listdir(os.path.join(other, cls)))[0]
        os.rename(os.path.join(other, cls, name), os.path.join(other, cls, "z" + name))
        with self.loader() as l:
            st = self.mid_state(l)
            rest = [k for b in l.batches() for k in b.keys]  # epoch 1, whole, for its keys' order
        self.assertTrue(st.get("fingerprint", "").startswith("v1:"), st)
        with self.loader(other) as l:
            mine = l.state_dict()["fingerprint"]
            self.assertNotEqual(mine, st["fingerprint"])
            with self.assertRaisesRegex(ValueError, "other data .*%s.*%s" % (st["fingerprint"], mine)):
                l.load_state_dict(st)
            # The server refuses it too, naming both.
            l._resume = (st["epoch"], st)
            l.set_epoch(st["epoch"])
            with self.assertRaisesRegex(ValueError, "refused.*%s.*%s" % (st["fingerprint"], mine)):
                list(l.batches())
        # The same data moved elsewhere resumes; so does a state saved
        # before fingerprints.
        old = dict(st)
        del old["fingerprint"]
        for data, state in ((moved, st), (self.data, old)):
            with self.loader(data) as l:
                l.load_state_dict(state)
                got = [k for b in l.batches() for k in b.keys]
            self.assertEqual(len(got), len(rest) - 8, data)  # 2 batches of 4 served before


if __name__ == "__main__":
    unittest.main()
