"""A torchvision dataset object as faster.Loader's data: where its files lie,
which split, and its transform.

    trainset = torchvision.datasets.CIFAR10("./data", train=True, transform=t)
    loader = faster.Loader(trainset, batch_size=128, shuffle=True)

is DataLoader(trainset, ...) with the Go pipeline reading the same files:
the dataset object is asked only for its root, split and transform (its
__getitem__ is never called). Datasets whose samples the server cannot
read as the object would (a target_transform, a loader other than PIL's,
a class not listed here) are refused naming what cannot be honoured —
never read silently as something else.
"""
import os

# torchvision's ImageFolder and DatasetFolder loader: PIL's open + convert("RGB")
# (or accimage's, which yields the same pixels).
_DEFAULT_LOADERS = ("default_loader", "pil_loader", "accimage_loader")

# torchvision.datasets.folder.IMG_EXTENSIONS (0.14), what ImageFolder lists.
_IMG_EXTENSIONS = (".jpg", ".jpeg", ".png", ".ppm", ".bmp", ".pgm", ".tif", ".tiff", ".webp")


class UnsupportedDataset(TypeError):
    """A dataset object faster.Loader cannot read as it reads itself."""


def _class_names(ds):
    return [c.__name__ for c in type(ds).__mro__]


def _refuse_target_transform(ds, name):
    if getattr(ds, "target_transform", None) is not None:
        raise UnsupportedDataset(
            "faster: %s(target_transform=%r): the server serves the stored labels; apply the target "
            "transform to the labels a batch yields" % (name, ds.target_transform))


def from_dataset(ds):
    """(path, split, transform, indices) of a torchvision dataset object:
    path and split for the server, the object's transform (None if it has
    none), and indices, the positions a torch.utils.data.Subset keeps (None
    for the whole dataset). Raises UnsupportedDataset naming the class or
    argument it cannot honour."""
    names = _class_names(ds)
    name = names[0]
    if "Subset" in names and hasattr(ds, "dataset") and hasattr(ds, "indices"):
        path, split, transform, inner = from_dataset(ds.dataset)
        indices = [int(i) for i in ds.indices]
        if inner is not None:
            indices = [inner[i] for i in indices]
        return path, split, transform, indices
    if "CIFAR10" in names:  # CIFAR100 is a subclass
        _refuse_target_transform(ds, name)
        return (os.path.join(os.fspath(ds.root), ds.base_folder), "train" if ds.train else "test",
                ds.transform, None)
    if "MNIST" in names:  # FashionMNIST, KMNIST, EMNIST, QMNIST are subclasses
        if name in ("EMNIST", "QMNIST"):
            raise UnsupportedDataset("faster: %s: its files are not MNIST's train/t10k IDX pair; pack them with "
                                     "faster pack, or pass the IDX directory" % name)
        _refuse_target_transform(ds, name)
        return os.fspath(ds.raw_folder), "train" if ds.train else "test", ds.transform, None
    if "ImageNet" in names:
        _refuse_target_transform(ds, name)
        return os.fspath(ds.root), ds.split, ds.transform, None
    if "DatasetFolder" in names:  # ImageFolder is a subclass
        _refuse_target_transform(ds, name)
        loader = getattr(ds, "loader", None)
        if loader is not None and getattr(loader, "__name__", "") not in _DEFAULT_LOADERS:
            raise UnsupportedDataset("faster: %s(loader=%r): the server decodes images as torchvision's "
                                     "default_loader (PIL, RGB); a custom loader cannot run there" % (name, loader))
        ext = getattr(ds, "extensions", None)
        if ext is None:
            raise UnsupportedDataset("faster: %s(is_valid_file=...): the server lists images by torchvision's "
                                     "extensions; a custom is_valid_file cannot run there" % name)
        if isinstance(ext, str):
            ext = (ext,)
        if {e.lower() for e in ext} != set(_IMG_EXTENSIONS):
            raise UnsupportedDataset("faster: %s(extensions=%r): the server lists the files torchvision's "
                                     "ImageFolder lists (%s); other extensions cannot be honoured"
                                     % (name, tuple(ext), ", ".join(_IMG_EXTENSIONS)))
        # ImageFolder's root is the folder of class folders: it has no split.
        return os.fspath(ds.root), None, ds.transform, None
    raise UnsupportedDataset(
        "faster: %s: faster.Loader reads torchvision's ImageFolder, DatasetFolder, ImageNet, CIFAR10, CIFAR100, "
        "MNIST, FashionMNIST and KMNIST objects (and Subsets of them), or a path; pass the path of this "
        "dataset's files instead" % name)


def is_dataset(data):
    """Whether data is a dataset object rather than a path."""
    return not isinstance(data, (str, bytes, os.PathLike)) and (
        hasattr(data, "__getitem__") and hasattr(data, "__len__"))
