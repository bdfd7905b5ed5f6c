"""The f32-chw layout's arithmetic for batches served as u8-hwc.

A batch served with layout="u8-hwc" is uint8 [N, H, W, C]: a quarter of
the bytes to copy to the GPU. normalize() turns it into the float32
[N, C, H, W] tensor layout="f32-chw" would have served, bit for bit, on
the device the batch is on:

    x = faster.normalize(images.cuda(non_blocking=True))

torchvision's ToTensor then Normalize is ((v / 255) - mean) / std in
float32 with a true division at each step, and that is what the loader
computes (a table of the 256 values per channel). On CUDA, PyTorch
divides by a Python number as a multiplication by its reciprocal (one
bit off in places); here every divisor is a tensor on the batch's device,
so the divisions are true ones there too.
"""

IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)


def normalize(images, mean=IMAGENET_MEAN, std=IMAGENET_STD, channels_last=True):
    """Return images (a uint8 torch tensor [N, H, W, C], C 1 or 3, on any
    device) as float32 [N, C, H, W] normalised per channel with mean and
    std (three values; a one-channel batch takes the first), the values
    of the loader's f32-chw layout. With channels_last (the default) the
    result keeps the batch's interleaved memory (torch.channels_last, what
    convolutions in 16 bits prefer: no copy); channels_last=False returns
    it contiguous NCHW."""
    import torch

    if not isinstance(images, torch.Tensor):
        raise TypeError("faster.normalize: a torch tensor, not %s (output='torch')" % type(images).__name__)
    if images.dtype != torch.uint8 or images.dim() != 4 or images.shape[3] not in (1, 3):
        raise ValueError("faster.normalize: want uint8 [N, H, W, C] with C 1 or 3 (layout='u8-hwc'), got %s %s"
                         % (images.dtype, tuple(images.shape)))
    mean, std = tuple(float(v) for v in mean), tuple(float(v) for v in std)
    if len(mean) != 3 or len(std) != 3:
        raise ValueError("faster.normalize: mean and std of three channels each, got %r and %r" % (mean, std))
    if any(s == 0 for s in std):
        raise ValueError("faster.normalize: std %r has a zero" % (std,))
    c = images.shape[3]
    d255, m, s = _constants(torch, images.device, mean[:c], std[:c])
    x = images.permute(0, 3, 1, 2).to(torch.float32)  # strides kept: channels-last memory
    x.div_(d255).sub_(m).div_(s)
    if not channels_last:
        x = x.contiguous()
    return x


# The divisors and means on each device, made once: torch.tensor(...,
# device="cuda") copies from pageable memory and waits for the stream, which
# would stall a training loop's overlap at every batch.
_CONSTANTS = {}


def _constants(torch, device, mean, std):
    key = (str(device), mean, std)
    got = _CONSTANTS.get(key)
    if got is None:
        c = len(mean)
        got = (torch.tensor(255.0, dtype=torch.float32, device=device),
               torch.tensor(mean, dtype=torch.float32, device=device).view(1, c, 1, 1),
               torch.tensor(std, dtype=torch.float32, device=device).view(1, c, 1, 1))
        _CONSTANTS[key] = got
    return got
