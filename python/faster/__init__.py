"""faster: batches from the Go input pipeline of `faster serve`, through
shared memory, for PyTorch training loops.

    from faster import Loader
    loader = Loader("/data/train", batch_size=256, transform="train")  # rank from RANK/WORLD_SIZE
    for epoch in range(epochs):
        loader.set_epoch(epoch)
        for images, labels in loader:  # views of shared memory, valid until the next batch
            ...

See Loader for the arguments and the lifetime of a batch, and the Go
package serve (serve/doc.go) for the protocol. MixUp and CutMix, which act
on whole batches, are in faster.mixing (imported on its own: it needs
torch). faster.normalize turns a u8-hwc batch, on the GPU, into the
f32-chw layout's values bit for bit.
"""
from .loader import Batch, Loader, ServerError
from ._normalize import IMAGENET_MEAN, IMAGENET_STD, normalize

__all__ = ["Batch", "Loader", "ServerError", "normalize", "IMAGENET_MEAN", "IMAGENET_STD"]
__version__ = "0.1.0"
