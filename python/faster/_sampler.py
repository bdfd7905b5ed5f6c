"""DataLoader's sampler=, batch_sampler= and generator= for faster.Loader,
and the base seed DataLoader draws (docs/serve.md, "DataLoader's arguments
and samplers").

A sampler is honoured one of three ways, never dropped:

- DistributedSampler(drop_last=False): its num_replicas, rank and shuffle
  are the loader's world_size, rank and shuffle (the server strides and pads
  the epoch's order as DistributedSampler does);
- torchvision's RASampler (references/classification/sampler.py; any
  object of a class named RASampler with repetitions, num_repeats or reps):
  its repetitions are repeated_augmentation, num_replicas, rank and shuffle
  mapped as above (the server serves RASampler's counts and repeats);
- any other sampler or iterable of ints (SequentialSampler, RandomSampler,
  SubsetRandomSampler, WeightedRandomSampler, a DistributedSampler with
  drop_last=True, a list, range, numpy array or tensor): the server runs
  with --sampler indices and each epoch the client iterates it, as
  DataLoader does, and sends the positions; the server serves exactly
  those, in that order.
"""
import os

import numpy as np

from . import _protocol as P

# Positions of one ORDER frame: the frame holds the type byte and int64s.
_CHUNK = (P.MAX_FRAME - 1) // 8


class Plan:
    """What a sampler= becomes: the loader's rank, world size, shuffle and
    repeated augmentation, or an order sampler iterated every epoch."""

    def __init__(self, rank=None, world_size=None, shuffle=None, repeats=0, order=None, mapped=None):
        self.rank, self.world_size, self.shuffle = rank, world_size, shuffle
        self.repeats = repeats
        self.order = order  # the sampler iterated each epoch, or None
        self.mapped = mapped  # the sampler mapped onto the loader's options, or None


def _name(x):
    return type(x).__name__


def _is_distributed(s):
    try:
        from torch.utils.data import DistributedSampler
        if isinstance(s, DistributedSampler):
            return True
    except ImportError:
        pass
    return _name(s) == "DistributedSampler"


def _ra_repetitions(s):
    """RASampler's repetitions, or None when s is no RASampler."""
    if _name(s) != "RASampler":
        return None
    for attr in ("repetitions", "num_repeats", "reps"):
        v = getattr(s, attr, None)
        if v is not None:
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise ValueError("faster: sampler=RASampler with %s=%r: want a positive integer" % (attr, v))
            return v
    raise ValueError("faster: sampler=RASampler has no repetitions (repetitions, num_repeats or reps)")


def resolve(sampler, batch_sampler, shuffle, rank, world_size):
    """The Plan of sampler= (None: an empty Plan). rank and world_size are
    the user's arguments (None when not given): a sampler saying otherwise
    is an error, as is shuffle=True beside a sampler (DataLoader's rule)."""
    if batch_sampler is not None:
        raise ValueError("faster: batch_sampler=%s is not supported: the server batches (batch_size=, drop_last=); "
                         "give the sampler of single indices as sampler=" % _name(batch_sampler))
    if sampler is None:
        return Plan()
    if shuffle:
        raise ValueError("faster: sampler option is mutually exclusive with shuffle (as DataLoader): "
                         "the sampler says the order")
    reps = _ra_repetitions(sampler)
    if reps is not None or (_is_distributed(sampler) and not getattr(sampler, "drop_last", False)):
        what = "RASampler" if reps is not None else "DistributedSampler"
        r, w = getattr(sampler, "rank", None), getattr(sampler, "num_replicas", None)
        if not isinstance(r, int) or not isinstance(w, int):
            raise ValueError("faster: sampler=%s without integer rank and num_replicas (%r, %r)" % (what, r, w))
        for arg, mine, theirs in (("rank", rank, r), ("world_size", world_size, w)):
            if mine is not None and mine != theirs:
                raise ValueError("faster: %s=%d, but sampler=%s has %s %d" % (
                    arg, mine, what, "rank" if arg == "rank" else "num_replicas", theirs))
        return Plan(rank=r, world_size=w, shuffle=bool(getattr(sampler, "shuffle", True)), repeats=reps or 0,
                    mapped=sampler)
    if isinstance(sampler, (str, bytes, dict)) or not hasattr(sampler, "__iter__"):
        raise TypeError("faster: sampler=%r: want a sampler (an iterable of dataset indices, as DataLoader's)"
                        % (sampler,))
    return Plan(order=sampler, shuffle=False)


def epoch_order(sampler, n):
    """One epoch of sampler, iterated as DataLoader iterates it, as an int64
    array of positions in [0, n); TypeError or ValueError naming the first
    element that is not one."""
    if isinstance(sampler, np.ndarray):
        idx = sampler
    elif _name(sampler) == "Tensor":
        idx = sampler.detach().cpu().numpy()
    else:
        idx = list(iter(sampler))
        for i, v in enumerate(idx):
            if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, np.integer)) and not (
                    _name(v) == "Tensor" and getattr(v, "ndim", 1) == 0 and not v.is_floating_point()):
                raise TypeError("faster: sampler=%s yielded %r (%s) at position %d: want dataset indices (ints); "
                                "a sampler of batches is batch_sampler=, which is not supported"
                                % (_name(sampler), v, _name(v), i))
        idx = np.array([int(v) for v in idx], dtype=np.int64)
    idx = np.asarray(idx)
    if idx.ndim != 1 or (idx.size and not np.issubdtype(idx.dtype, np.integer)):
        raise TypeError("faster: sampler=%s: an array of shape %s and dtype %s: want one dimension of ints"
                        % (_name(sampler), idx.shape, idx.dtype))
    idx = idx.astype("<i8", copy=False)
    bad = np.flatnonzero((idx < 0) | (idx >= n))
    if bad.size:
        i = int(bad[0])
        raise ValueError("faster: sampler=%s yielded index %d at position %d: the dataset has %d samples (0 to %d)"
                         % (_name(sampler), int(idx[i]), i, n, n - 1))
    return idx


def order_frames(idx):
    """The ORDER frames' payloads of idx (at least one, empty for an empty
    order)."""
    b = idx.astype("<i8", copy=False).tobytes()
    step = _CHUNK * 8
    return [b[i:i + step] for i in range(0, len(b), step)] or [b""]


def draw_seed(generator=None):
    """DataLoader's base seed: torch.empty((), dtype=torch.int64)
    .random_(generator=generator).item(), from torch's default generator
    unless one is given (so torch.manual_seed makes it reproducible);
    without torch, from the operating system."""
    try:
        import torch
    except ImportError:
        if generator is not None:
            raise ValueError("faster: generator= needs torch")
        return int.from_bytes(os.urandom(8), "little") >> 1
    return int(torch.empty((), dtype=torch.int64).random_(generator=generator).item())


def shared_seed(seed, world_size, matters=True):
    """The seed every rank uses: rank 0's, broadcast over an initialised
    torch.distributed group. Without one on several ranks the ranks cannot
    agree on a drawn seed (each would stride its own permutation, and their
    parts would overlap): seed 0, as before seeds were drawn, with a warning
    when the seed matters (a shuffled order or random augmentation)."""
    if world_size == 1:
        return seed
    import sys
    dist = sys.modules.get("torch.distributed")
    if dist is None or not dist.is_available() or not dist.is_initialized():
        if matters:
            import warnings
            warnings.warn("faster: seed=None on %d ranks without an initialised torch.distributed process group: "
                          "the ranks cannot share a drawn seed, so the seed is 0 on every rank (every run the same); "
                          "give seed= (the same on every rank), or initialise the group before the first iteration "
                          "(rank 0's draw is then broadcast)" % world_size)
        return 0
    box = [seed]
    dist.broadcast_object_list(box, src=0)
    return int(box[0])
