"""MixUp and CutMix: the batch-level augmentations of torchvision's
classification references (references/classification/transforms.py of
torchvision 0.14: RandomMixup, RandomCutmix, and train.py's RandomChoice
between them), on the torch side, on whatever device the batch is.

They act on a whole batch, after collation, so they are not part of the
per-sample transform handed to faster.Loader: call one on each batch in
the loop, after moving it to the device, as torchvision's reference calls
it on each collated batch (its collate_fn is
`mixupcutmix(*default_collate(batch))`):

    from faster.mixing import RandomChoice, RandomCutmix, RandomMixup

    g = torch.Generator().manual_seed(seed)  # reproducible draws
    mix = RandomChoice([RandomMixup(1000, p=1.0, alpha=0.2, generator=g),
                        RandomCutmix(1000, p=1.0, alpha=1.0, generator=g)], generator=g)
    for images, labels in faster.Loader(traindir, transform=train):
        images, labels = images.cuda(non_blocking=True), labels.cuda(non_blocking=True)
        images, labels = mix(images, labels)   # labels: (N, num_classes) floats
        loss = criterion(model(images), labels)  # CrossEntropyLoss takes soft labels

Semantics (torchvision's): with probability p the batch is mixed, else it
is returned as it is with one-hot labels. One lambda per batch, drawn from
Beta(alpha, alpha) (as torch._sample_dirichlet([alpha, alpha])[0]). The
batch is paired with itself rolled by one (row i with row i-1). MixUp:
images lambda*x + (1-lambda)*x_rolled, labels likewise. CutMix: a box
centred at a uniform pixel (x, y), of half sizes int(r*W) and int(r*H)
with r = sqrt(1-lambda)/2, clipped to the image, takes the rolled batch's
pixels; lambda becomes 1 - box area / image area, and the labels mix with
it.

Random draws: from `generator` (a CPU torch.Generator) when given, else
torch's global generator, in the reference's order (one uniform for p, the
Beta, then for CutMix the box's x and y), so that with generator=None and
torch.manual_seed(s) the draws are the reference's. The draws are on the
CPU whatever the batch's device; the pixels never leave it.

inplace=False (the default, as torchvision's) clones the batch first.
faster.Loader's batches VIEW the shared-memory slot of the batch: mix a
copy (the default, or after .cuda()), never the slot in place.

Labels: a 1-D integer tensor (any integer dtype; torchvision's asks for
int64), one-hot encoded to the batch's dtype, or, beyond the reference, a
2-D (N, num_classes) floating tensor of labels already soft (the output of
an earlier mixing step, or label smoothing). Images: a 4-D floating batch,
N x C x H x W (torch's channels_last memory format included; with
layout="u8-hwc", normalise and permute to NCHW first).
"""
import math

import torch

__all__ = ["RandomMixup", "RandomCutmix", "RandomChoice"]


def _check(batch, target, num_classes):
    if not isinstance(batch, torch.Tensor) or batch.ndim != 4:
        raise ValueError("faster.mixing: batch of %d dimensions: want N x C x H x W"
                         % (getattr(batch, "ndim", -1),))
    if not batch.is_floating_point():
        raise TypeError("faster.mixing: batch of dtype %s: want a floating tensor (normalise uint8 batches first)"
                        % (batch.dtype,))
    if not isinstance(target, torch.Tensor):
        raise TypeError("faster.mixing: target of type %s: want a tensor" % (type(target).__name__,))
    if target.ndim == 1:
        if target.dtype.is_floating_point or target.dtype == torch.bool or target.dtype.is_complex:
            raise TypeError("faster.mixing: 1-D target of dtype %s: want class indices (integers)" % (target.dtype,))
    elif target.ndim == 2:
        if not target.dtype.is_floating_point or target.shape[1] != num_classes:
            raise ValueError("faster.mixing: 2-D target %s of dtype %s: want (N, %d) floating soft labels"
                             % (tuple(target.shape), target.dtype, num_classes))
    else:
        raise ValueError("faster.mixing: target of %d dimensions: want 1 (class indices) or 2 (soft labels)"
                         % target.ndim)
    if target.shape[0] != batch.shape[0]:
        raise ValueError("faster.mixing: %d targets for %d images" % (target.shape[0], batch.shape[0]))


class _Mixing(torch.nn.Module):
    def __init__(self, num_classes, p=0.5, alpha=1.0, inplace=False, generator=None):
        super().__init__()
        if isinstance(num_classes, bool) or not isinstance(num_classes, int) or num_classes < 1:
            raise ValueError("faster.mixing: num_classes=%r: want a positive integer" % (num_classes,))
        if not 0.0 <= p <= 1.0:
            raise ValueError("faster.mixing: p=%r: want a probability in [0, 1]" % (p,))
        if not alpha > 0:
            raise ValueError("faster.mixing: alpha=%r: want a positive number (Beta(alpha, alpha))" % (alpha,))
        if generator is not None and generator.device.type != "cpu":
            raise ValueError("faster.mixing: generator on %s: want a CPU torch.Generator (the draws are made on "
                             "the CPU, whatever the batch's device)" % (generator.device,))
        self.num_classes = num_classes
        self.p = p
        self.alpha = alpha
        self.inplace = inplace
        self.generator = generator

    def _prepare(self, batch, target):
        _check(batch, target, self.num_classes)
        if not self.inplace:
            batch = batch.clone()
            target = target.clone()
        if target.ndim == 1:
            target = torch.nn.functional.one_hot(target.long(), num_classes=self.num_classes).to(dtype=batch.dtype)
        else:
            target = target.to(dtype=batch.dtype)
        return batch, target

    def _applies(self):
        return torch.rand(1, generator=self.generator).item() < self.p

    def _lambda(self):
        return float(torch._sample_dirichlet(torch.tensor([self.alpha, self.alpha]), generator=self.generator)[0])

    def extra_repr(self):
        return "num_classes=%d, p=%s, alpha=%s, inplace=%s" % (self.num_classes, self.p, self.alpha, self.inplace)


class RandomMixup(_Mixing):
    """MixUp on a batch (torchvision reference's RandomMixup): with
    probability p, images and one-hot labels become lambda times
    themselves plus (1 - lambda) times the batch rolled by one, lambda
    from Beta(alpha, alpha). Returns (images, labels (N, num_classes))."""

    def forward(self, batch, target):
        batch, target = self._prepare(batch, target)
        if not self._applies():
            return batch, target
        batch_rolled = batch.roll(1, 0)
        target_rolled = target.roll(1, 0)
        lam = self._lambda()
        batch_rolled.mul_(1.0 - lam)
        batch.mul_(lam).add_(batch_rolled)
        target_rolled.mul_(1.0 - lam)
        target.mul_(lam).add_(target_rolled)
        return batch, target


class RandomCutmix(_Mixing):
    """CutMix on a batch (torchvision reference's RandomCutmix): with
    probability p, a box of the images, whose size comes from lambda ~
    Beta(alpha, alpha) and whose centre is a uniform pixel, takes the
    pixels of the batch rolled by one; the one-hot labels mix with lambda
    corrected to the box's area. Returns (images, labels (N, num_classes))."""

    def forward(self, batch, target):
        batch, target = self._prepare(batch, target)
        if not self._applies():
            return batch, target
        batch_rolled = batch.roll(1, 0)
        target_rolled = target.roll(1, 0)
        lam = self._lambda()
        H, W = batch.shape[-2], batch.shape[-1]
        x1, y1, x2, y2 = self.box(lam, H, W)
        batch[:, :, y1:y2, x1:x2] = batch_rolled[:, :, y1:y2, x1:x2]
        lam = float(1.0 - (x2 - x1) * (y2 - y1) / (W * H))
        target_rolled.mul_(1.0 - lam)
        target.mul_(lam).add_(target_rolled)
        return batch, target

    def box(self, lam, H, W):
        """Draws the box (x1, y1, x2, y2) of an H x W batch for lambda
        (CutMix paper, page 12, as torchvision's reference): the centre
        uniform over the pixels, half sizes int(r*W), int(r*H) with
        r = sqrt(1 - lambda)/2, clipped to the image."""
        r_x = int(torch.randint(W, (1,), generator=self.generator))
        r_y = int(torch.randint(H, (1,), generator=self.generator))
        r = 0.5 * math.sqrt(1.0 - lam)
        r_w_half, r_h_half = int(r * W), int(r * H)
        return max(r_x - r_w_half, 0), max(r_y - r_h_half, 0), min(r_x + r_w_half, W), min(r_y + r_h_half, H)


class RandomChoice(torch.nn.Module):
    """Applies one of transforms to (batch, target), chosen with weights p
    (equal when None), as torchvision.transforms.RandomChoice does in the
    reference's train.py, but drawing from generator (a CPU
    torch.Generator, or torch's global generator) instead of Python's
    random, so the choice is reproducible with the mixing's draws."""

    def __init__(self, transforms, p=None, generator=None):
        super().__init__()
        transforms = list(transforms)
        if not transforms:
            raise ValueError("faster.mixing: RandomChoice of no transforms")
        if p is not None and (len(p) != len(transforms) or any(w < 0 for w in p) or sum(p) <= 0):
            raise ValueError("faster.mixing: p=%r: want %d non-negative weights, not all 0" % (p, len(transforms)))
        self.transforms = torch.nn.ModuleList(transforms) if all(
            isinstance(t, torch.nn.Module) for t in transforms) else transforms
        self.p = None if p is None else [float(w) for w in p]
        self.generator = generator

    def forward(self, *args):
        w = torch.tensor(self.p if self.p is not None else [1.0] * len(self.transforms), dtype=torch.float64)
        i = int(torch.multinomial(w, 1, generator=self.generator))
        return self.transforms[i](*args)
