"""faster.mixing (MixUp, CutMix, RandomChoice) checked against what the
torchvision reference's RandomMixup/RandomCutmix promise, not against a
transcription of their code: from the outputs alone, the images are one
scalar lambda's mix of the batch and the batch rolled by one (MixUp), or
the batch with one box of the rolled batch's pixels (CutMix), the labels
the same lambda's (CutMix: 1 - the box's area) mix of one-hot rows, each
summing to 1; and over many draws, the probability p, lambda's Beta(alpha,
alpha) moments, the box centre's uniformity and RandomChoice's weights.
"""
import importlib.util
import math
import os
import unittest

HAVE_TORCH = importlib.util.find_spec("torch") is not None
REQUIRE = os.environ.get("FASTER_REQUIRE_DATA") == "1"

if HAVE_TORCH:
    import torch
    from faster.mixing import RandomChoice, RandomCutmix, RandomMixup


def _batch(n=4, c=3, h=5, w=7, seed=0, device="cpu"):
    g = torch.Generator().manual_seed(seed)
    x = torch.rand(n, c, h, w, generator=g) + 0.01  # no two rows equal anywhere (almost surely)
    y = torch.tensor([0, 2, 1, 3, 4, 2, 0, 1][:n])
    return x.to(device), y.to(device)


def _onehot(y, k, dtype=None):
    return torch.nn.functional.one_hot(y, k).to(dtype or torch.float32)


class Mixing(unittest.TestCase):
    def setUp(self):
        if not HAVE_TORCH:
            if REQUIRE:
                self.fail("torch missing and FASTER_REQUIRE_DATA=1")
            self.skipTest("torch missing")

    def test_mixup_is_one_lambdas_mix(self):
        x, y = _batch()
        x0, y0 = x.clone(), y.clone()
        for seed in range(5):
            mix = RandomMixup(5, p=1.0, alpha=1.0, generator=torch.Generator().manual_seed(seed))
            out, t = mix(x, y)
            self.assertTrue(torch.equal(x, x0) and torch.equal(y, y0), "inplace=False changed the input")
            self.assertEqual(t.shape, (4, 5))
            self.assertEqual(t.dtype, x.dtype)
            # Labels: rows sum to 1, lambda on the row's own class, 1 - lambda
            # on the previous row's (y[0] != y[-1] here).
            torch.testing.assert_close(t.sum(1), torch.ones(4))
            lam = float(t[0, y[0]])
            self.assertTrue(0.0 <= lam <= 1.0)
            want_t = lam * _onehot(y, 5) + (1 - lam) * _onehot(y.roll(1, 0), 5)
            torch.testing.assert_close(t, want_t)
            # Images: the same lambda mixes every pixel with the rolled batch.
            torch.testing.assert_close(out, lam * x + (1 - lam) * x.roll(1, 0), rtol=1e-5, atol=1e-6)

    def test_cutmix_box_and_area_lambda(self):
        x, y = _batch(h=16, w=24)
        seen_partial = 0
        for seed in range(40):
            mix = RandomCutmix(5, p=1.0, alpha=1.0, generator=torch.Generator().manual_seed(seed))
            out, t = mix(x, y)
            changed = (out != x).any(0).any(0)  # H x W: where any image took other pixels
            ys, xs = torch.nonzero(changed, as_tuple=True)
            if len(ys):
                y1, y2, x1, x2 = int(ys.min()), int(ys.max()) + 1, int(xs.min()), int(xs.max()) + 1
                # One rectangle, all of it the rolled batch's pixels, exactly.
                self.assertEqual(int(changed.sum()), (y2 - y1) * (x2 - x1))
                self.assertTrue(torch.equal(out[:, :, y1:y2, x1:x2], x.roll(1, 0)[:, :, y1:y2, x1:x2]))
                area = (y2 - y1) * (x2 - x1)
                seen_partial += area < 16 * 24
            else:
                area = 0
            keep = torch.ones(16, 24, dtype=torch.bool)
            if area:
                keep[y1:y2, x1:x2] = False
            self.assertTrue(torch.equal(out[:, :, keep], x[:, :, keep]))
            # lambda is 1 - the box's share of the picture.
            lam = 1.0 - area / (16 * 24)
            torch.testing.assert_close(t, lam * _onehot(y, 5) + (1 - lam) * _onehot(y.roll(1, 0), 5))
            torch.testing.assert_close(t.sum(1), torch.ones(4))
        self.assertGreater(seen_partial, 10)

    def test_cutmix_box_from_lambda(self):
        # The box's half sizes are int(r*W), int(r*H), r = sqrt(1-lambda)/2,
        # around its centre, clipped; lambda 1 leaves an empty box at the centre.
        m = RandomCutmix(3, generator=torch.Generator().manual_seed(1))
        for lam in (0.0, 0.19, 0.5, 0.75, 0.999, 1.0):
            for _ in range(50):
                x1, y1, x2, y2 = m.box(lam, 30, 40)
                self.assertTrue(0 <= x1 <= x2 <= 40 and 0 <= y1 <= y2 <= 30)
                r = 0.5 * math.sqrt(1 - lam)
                if x1 > 0 and x2 < 40:
                    self.assertEqual(x2 - x1, 2 * int(r * 40))
                if y1 > 0 and y2 < 30:
                    self.assertEqual(y2 - y1, 2 * int(r * 30))
                self.assertLessEqual(x2 - x1, 2 * int(r * 40))
                self.assertLessEqual(y2 - y1, 2 * int(r * 30))

    def test_p_zero_and_labels(self):
        x, y = _batch()
        for cls in (RandomMixup, RandomCutmix):
            out, t = cls(5, p=0.0)(x, y)
            self.assertTrue(torch.equal(out, x))
            self.assertTrue(torch.equal(t, _onehot(y, 5)))
            self.assertIsNot(out, x)  # a copy, not the (possibly shared-memory) input
            # int32 labels, and soft labels from an earlier step.
            _, t32 = cls(5, p=0.0)(x, y.int())
            self.assertTrue(torch.equal(t32, _onehot(y, 5)))
            out2, t2 = cls(5, p=1.0, generator=torch.Generator().manual_seed(3))(x, _onehot(y, 5) * 0.9 + 0.02)
            torch.testing.assert_close(t2.sum(1), torch.ones(4))
            # In place: the input itself is the output.
            xi = x.clone()
            outi, _ = cls(5, p=1.0, inplace=True, generator=torch.Generator().manual_seed(3))(xi, y)
            self.assertEqual(outi.data_ptr(), xi.data_ptr())
            for bad in ((x[0], y), (x.to(torch.uint8), y), (x, y.float()), (x, y[:3]), (x, _onehot(y, 4))):
                with self.assertRaises((ValueError, TypeError)):
                    cls(5)(*bad)
        for kw in ({"num_classes": 0}, {"num_classes": 5, "alpha": 0}, {"num_classes": 5, "p": 1.5}):
            with self.assertRaises(ValueError):
                RandomMixup(**kw)

    def test_reproducible(self):
        x, y = _batch(h=12, w=12)
        for cls in (RandomMixup, RandomCutmix):
            a = [cls(5, generator=torch.Generator().manual_seed(11))(x, y) for _ in range(2)]
            self.assertTrue(torch.equal(a[0][0], a[1][0]) and torch.equal(a[0][1], a[1][1]))
            m1 = cls(5, p=1.0, generator=torch.Generator().manual_seed(11))
            m2 = cls(5, p=1.0, generator=torch.Generator().manual_seed(12))
            self.assertFalse(torch.equal(m1(x, y)[1], m2(x, y)[1]))
        # Without a generator the draws come from torch's global one, in the
        # reference's order: p's uniform first, then the Beta.
        torch.manual_seed(5)
        _, t = RandomMixup(5, p=1.0)(x, y)
        torch.manual_seed(5)
        torch.rand(1)
        lam = float(torch._sample_dirichlet(torch.tensor([1.0, 1.0]))[0])
        self.assertAlmostEqual(float(t[0, y[0]]), lam, places=6)

    def test_draw_distributions(self):
        # p: the share of batches mixed; lambda: Beta(alpha, alpha)'s mean
        # 1/2 and variance 1/(4(2 alpha + 1)); 4000 draws, bounds of about
        # 5 standard errors (so a correct implementation fails with
        # probability below 1e-5, and the seed is fixed anyway).
        n = 4000
        x, y = torch.rand(2, 1, 2, 2), torch.tensor([0, 1])
        for alpha in (0.2, 1.0):
            g = torch.Generator().manual_seed(int(alpha * 10))
            mix = RandomMixup(2, p=0.3, alpha=alpha, generator=g)
            lams = []
            for _ in range(n):
                _, t = mix(x, y)
                if float(t[0, 0]) != 1.0:
                    lams.append(float(t[0, 0]))
            frac = len(lams) / n
            self.assertLess(abs(frac - 0.3), 5 * math.sqrt(0.3 * 0.7 / n), "p=0.3: mixed %.3f" % frac)
            lams = torch.tensor(lams, dtype=torch.float64)
            var = 1 / (4 * (2 * alpha + 1))
            m = len(lams)
            self.assertLess(abs(float(lams.mean()) - 0.5), 5 * math.sqrt(var / m), "alpha %g: mean" % alpha)
            # The variance's standard error, from Beta's fourth central moment.
            m4 = 3 * (2 * alpha + 1) / (16 * (2 * alpha + 1) ** 2 * (2 * alpha + 3))
            se = math.sqrt((m4 - var ** 2) / m)
            self.assertLess(abs(float(lams.var()) - var), 5 * se, "alpha %g: variance %.4f, want %.4f"
                            % (alpha, float(lams.var()), var))
            if alpha == 1.0:  # Beta(1, 1) is uniform: each tenth holds a tenth
                hist = torch.histc(lams, bins=10, min=0, max=1)
                for c in hist.tolist():
                    self.assertLess(abs(c / m - 0.1), 5 * math.sqrt(0.09 / m))
        # CutMix's box centre: uniform over the pixels (an empty box at
        # lambda 1 is its centre), chi-square over 8 x 6 cells.
        cm = RandomCutmix(2, generator=torch.Generator().manual_seed(4))
        counts = torch.zeros(6, 8)
        k = 4800
        for _ in range(k):
            x1, y1, x2, y2 = cm.box(1.0, 6, 8)
            self.assertEqual((x1, y1), (x2, y2))
            counts[y1, x1] += 1
        chi2 = float(((counts - k / 48) ** 2 / (k / 48)).sum())
        self.assertLess(chi2, 100.0, "chi-square %.1f over 47 degrees of freedom" % chi2)  # p < 1e-5
        # RandomChoice's weights.
        picks = []
        a = lambda b, t: ("a", b)  # noqa: E731
        b = lambda b, t: ("b", b)  # noqa: E731
        rc = RandomChoice([a, b], p=[1, 3], generator=torch.Generator().manual_seed(2))
        for _ in range(n):
            picks.append(rc(0, 0)[0])
        fb = picks.count("b") / n
        self.assertLess(abs(fb - 0.75), 5 * math.sqrt(0.75 * 0.25 / n))

    def test_device(self):
        # The same draws on every device, memory format and dtype: the CPU
        # generator decides, the pixels are mixed where they are (CUDA
        # when there is one).
        x, y = _batch(h=16, w=16)
        variants = [(x.contiguous(memory_format=torch.channels_last), y), (x.double(), y)]
        if torch.cuda.is_available():
            variants.append((x.cuda(), y.cuda()))
        for cls in (RandomMixup, RandomCutmix):
            a = cls(5, p=1.0, generator=torch.Generator().manual_seed(8))(x, y)
            for xv, yv in variants:
                b = cls(5, p=1.0, generator=torch.Generator().manual_seed(8))(xv, yv)
                self.assertEqual((b[0].device, b[0].dtype, b[1].dtype), (xv.device, xv.dtype, xv.dtype))
                torch.testing.assert_close(b[0].cpu().float(), a[0])
                torch.testing.assert_close(b[1].cpu().float(), a[1])

    def test_on_loader_batches(self):
        # The documented use: a plain call on each faster.Loader batch. The
        # batch views the server's shared memory, which mixing (a copy)
        # leaves as it was.
        import shutil
        import tempfile

        import numpy as np
        from PIL import Image

        import faster
        root = tempfile.mkdtemp(prefix="faster-mixing-")
        self.addCleanup(shutil.rmtree, root)
        rng = np.random.default_rng(1)
        for i in range(6):
            d = os.path.join(root, "c%d" % (i % 3))
            os.makedirs(d, exist_ok=True)
            Image.fromarray(rng.integers(0, 256, (20 + i, 24, 3), dtype=np.uint8)).save(os.path.join(d, "%d.jpg" % i))
        g = torch.Generator().manual_seed(0)
        mix = RandomChoice([RandomMixup(3, p=1.0, alpha=0.2, generator=g),
                            RandomCutmix(3, p=1.0, alpha=1.0, generator=g)], generator=g)
        n = 0
        with faster.Loader(root, batch_size=3, resolution=16, output="torch", rank=0, world_size=1) as loader:
            for images, labels in loader:
                before = images.clone()
                out, soft = mix(images, labels)
                self.assertTrue(torch.equal(images, before))
                self.assertEqual(out.shape, (3, 3, 16, 16))
                self.assertEqual(soft.shape, (3, 3))
                torch.testing.assert_close(soft.sum(1), torch.ones(3))
                n += 1
        self.assertEqual(n, 2)

if __name__ == "__main__":
    unittest.main()
