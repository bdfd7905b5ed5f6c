"""faster.datasets: a torchvision dataset object as faster.Loader's data.
What the object says (root, split, transform, a Subset's positions) is what
the server is asked for; what the server cannot honour (a target_transform,
a custom loader or is_valid_file, other extensions, a class it does not
know) is refused naming it, before any server starts.

Runs without FASTER_BIN (no server); needs torchvision and PIL."""
import importlib.util
import os
import shutil
import tempfile
import unittest

import faster
from faster import datasets as fd


def have(mod):
    return importlib.util.find_spec(mod) is not None


@unittest.skipUnless(have("torchvision") and have("PIL"), "needs torchvision and PIL")
class FromDatasetTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        from PIL import Image
        cls.tmp = tempfile.mkdtemp(prefix="faster-datasets-")
        for c in ("cat", "dog"):
            os.makedirs(os.path.join(cls.tmp, "val", c))
            for i in range(3):
                Image.new("RGB", (8, 6), (i * 40, 10, 200)).save(os.path.join(cls.tmp, "val", c, "%d.png" % i))

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def folder(self, **kw):
        import torchvision
        return torchvision.datasets.ImageFolder(os.path.join(self.tmp, "val"), **kw)

    def test_image_folder_and_subset(self):
        import torch.utils.data as tud
        import torchvision.transforms as T
        t = T.Compose([T.CenterCrop(4), T.ToTensor()])
        ds = self.folder(transform=t)
        self.assertEqual(fd.from_dataset(ds), (os.path.join(self.tmp, "val"), None, t, None))
        sub = tud.Subset(tud.Subset(ds, [5, 4, 3, 1]), [2, 0])
        self.assertEqual(fd.from_dataset(sub)[3], [3, 5])  # positions in the folder's own order
        self.assertTrue(fd.is_dataset(ds))
        self.assertFalse(fd.is_dataset(self.tmp))

    def test_refusals_name_what_cannot_be_honoured(self):
        from torchvision.datasets.folder import pil_loader
        cases = [
            (dict(target_transform=lambda y: y + 1), "target_transform"),
            (dict(loader=lambda p: pil_loader(p).convert("L")), "loader="),
            (dict(is_valid_file=lambda p: p.endswith(".png")), "is_valid_file"),
        ]
        for kw, word in cases:
            with self.subTest(word=word):
                with self.assertRaisesRegex(fd.UnsupportedDataset, word):
                    fd.from_dataset(self.folder(**kw))
                # faster.Loader refuses it before any server (no FASTER_BIN needed).
                with self.assertRaisesRegex(TypeError, word):
                    faster.Loader(self.folder(**kw), batch_size=2)

    def test_other_extensions_refused(self):
        import torchvision
        ds = torchvision.datasets.DatasetFolder(os.path.join(self.tmp, "val"), loader=torchvision.datasets.folder.default_loader,
                                                extensions=(".png",))
        with self.assertRaisesRegex(fd.UnsupportedDataset, r"extensions=\('.png',\)"):
            fd.from_dataset(ds)

    def test_unknown_dataset_class(self):
        import torch.utils.data as tud

        class Mine(tud.Dataset):
            def __len__(self):
                return 1

            def __getitem__(self, i):
                return i

        with self.assertRaisesRegex(fd.UnsupportedDataset, "Mine: faster.Loader reads"):
            fd.from_dataset(Mine())

    def test_no_transform(self):
        with self.assertRaisesRegex(ValueError, "has no transform"):
            faster.Loader(self.folder(), batch_size=2)


if __name__ == "__main__":
    unittest.main()
