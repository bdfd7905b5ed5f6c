"""The iterable Loader: starts `faster serve`, maps its shared-memory ring
and yields batches that view it."""
import collections
import glob
import importlib.util
import json
import mmap
import os
import select
import shutil
import socket
import struct
import subprocess
import sys
import tempfile
import time
import warnings
from typing import List, NamedTuple

import numpy as np

from . import _device
from . import _protocol as P
from . import _sampler
from . import datasets as _datasets
from ._meter import InputMeter


# Decode threads per CPU above which the server caps --workers (cmd/faster's
# workersPerCPU).
WORKERS_PER_CPU = 4


class ServerError(RuntimeError):
    """The `faster serve` process failed, reported an error, or died."""


class Batch(NamedTuple):
    """One batch as `Loader.batches()` yields it. images and labels view
    the shared memory and stay valid until the next batch is requested.

    Every rank yields the same number of batches of the same sizes, never
    an empty one: a rank with fewer samples than the largest rank repeats
    its epoch's first samples (as DistributedSampler(drop_last=False)
    does). `repeats` counts them; they are the batch's last rows, so
    `mask` (True for a sample's first appearance this epoch) weights them
    out of a metric or a loss if wanted."""
    images: object  # (valid, C, H, W) float32 or (valid, H, W, C) uint8
    labels: object  # (valid,) int64
    keys: List[str]  # each row's path (ImageFolder) or image/filename
    epoch: int
    index: int  # position in the epoch
    valid: int  # rows (never 0)
    repeats: int = 0  # of the rows, how many (the last ones) repeat a sample

    @property
    def mask(self):
        """Boolean numpy array of the rows: False for the repeats."""
        m = np.ones(self.valid, dtype=bool)
        m[self.valid - self.repeats:] = False
        return m


# The binary a wheel carries (make wheel): a serve-capable `faster` with
# libjpeg-turbo linked in.
_BUNDLED = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_bin", "faster")


def _find_binary(binary):
    """binary=, else $FASTER_BIN, else the wheel's own binary, else PATH."""
    b = binary or os.environ.get("FASTER_BIN")
    if not b and os.access(_BUNDLED, os.X_OK):
        b = _BUNDLED
    b = b or shutil.which("faster")
    if not b:
        raise FileNotFoundError(
            "faster: no `faster` binary: pass binary=, set FASTER_BIN, install the wheel "
            "(make wheel), or put it on PATH (go build -o bin/faster ./cmd/faster)")
    return b


def _default_rank(rank, world_size):
    """Rank and world size from the arguments, else torch.distributed's
    environment variables (RANK, WORLD_SIZE, as torchrun sets them), else an
    initialised default process group, else Open MPI's (OMPI_COMM_WORLD_RANK,
    OMPI_COMM_WORLD_SIZE), else an srun task's (SLURM_PROCID,
    SLURM_STEP_NUM_TASKS or SLURM_NTASKS, with SLURM_STEP_ID), else 0 of 1."""
    if rank is None and "RANK" in os.environ:
        rank = int(os.environ["RANK"])
    if world_size is None and "WORLD_SIZE" in os.environ:
        world_size = int(os.environ["WORLD_SIZE"])
    if rank is None or world_size is None:
        dist = sys.modules.get("torch.distributed")
        if dist is not None and dist.is_available() and dist.is_initialized():
            rank = dist.get_rank() if rank is None else rank
            world_size = dist.get_world_size() if world_size is None else world_size
    # Open MPI's mpirun, then a task of a Slurm srun step (as faster's
    # collective.FromEnv: the nearest launcher first; a batch script alone,
    # without SLURM_STEP_ID, is one process).
    env = os.environ
    if rank is None and world_size is None:
        if "OMPI_COMM_WORLD_RANK" in env:
            rank, world_size = int(env["OMPI_COMM_WORLD_RANK"]), int(env["OMPI_COMM_WORLD_SIZE"])
        elif "SLURM_PROCID" in env and ("SLURM_STEP_ID" in env or "SLURM_STEPID" in env):
            rank = int(env["SLURM_PROCID"])
            world_size = int(env.get("SLURM_STEP_NUM_TASKS") or env["SLURM_NTASKS"])
    rank = 0 if rank is None else rank
    world_size = 1 if world_size is None else world_size
    if world_size < 1 or not 0 <= rank < world_size:
        raise ValueError("faster: rank %d of world size %d" % (rank, world_size))
    return rank, world_size


class Loader:
    """Batches from the Go input pipeline, through shared memory.

        for images, labels in Loader("/data/imagenet/train", batch_size=256):
            ...

    The loader starts `faster serve` (binary from `binary`, $FASTER_BIN or
    PATH) once and keeps it for every epoch, and yields (images, labels):
    torch tensors when torch is installed (or output="torch"), numpy arrays
    with output="numpy". docs/serve.md has the table of DataLoader,
    DistributedSampler and StatefulDataLoader arguments and attributes and
    what each is here.

    Epochs: each iteration runs the next epoch, a new order and new
    augmentation draws, as DataLoader(shuffle=True) reshuffles on every
    iteration. set_epoch(e) (also as loader.sampler.set_epoch(e), as with
    DistributedSampler) and epoch= make the next iteration exactly epoch e,
    whatever ran before: a loader started fresh at epoch e (a resumed job)
    yields what a long-running one yields at epoch e, on every kind of data.

    Lifetime: images and labels VIEW the shared-memory slot of their batch;
    no copy is made. The slot goes back to the server when the next batch
    is requested (or the iteration ends), after which the server may
    overwrite it: keep a batch beyond that by copying it (.clone(),
    .copy(), or .pin_memory()/.cuda(non_blocking=True), which copy). With
    pin_memory=True on a CUDA machine the slot is handed back only once
    the work on the current CUDA stream at the next request has finished:
    a copy queued on another stream must be ordered before it
    (current_stream().wait_stream(s)) by then.

    Ranks: rank and world_size default from the environment variables RANK
    and WORLD_SIZE (torchrun), or an initialised torch.distributed group;
    each rank reads a disjoint part of the data, all parts together are the
    whole, and every rank yields len(loader) batches of the same sizes, so
    every rank runs every step (no rank is left waiting in an all-reduce).
    With drop_last=False (the default) the ranks are padded as
    DistributedSampler(drop_last=False) pads them: rank r serves positions
    r, r+W, ... of the epoch's order extended by its first samples, so a
    rank short of the largest one's count (or with no sample at all)
    repeats samples; Batch.repeats counts them (Batch.mask to leave them out
    of a metric). With drop_last=True every rank takes the whole batches of
    the smallest rank's samples, without repeats. exact=True is for
    evaluation: every sample once over the ranks, each rank its own part,
    no repeats and no padding, so ranks may yield different numbers of
    batches (by one at most) and a rank may yield none: the loop must not
    run a collective per step, only once at the end (all-reduce the metric
    sums), which every rank reaches.

    Arguments with DataLoader's names and meanings: batch_size, shuffle
    (None: shuffle unless transform is "eval"), drop_last (see above),
    num_workers (decode threads in the server; 0, DataLoader's "load in the
    main process", is one thread; None: all cores), pin_memory (with a
    CUDA device, the shared-memory ring is registered with CUDA, so each
    batch is pinned where it lies and .cuda(non_blocking=True) copies it
    asynchronously at pinned speed, the slot owned until the work queued
    on the current stream when the next batch is asked for has finished;
    pinned copies where registration fails; without a device it does
    nothing and warns once, as DataLoader does). workers= is the older spelling of
    num_workers where 0 means all cores.

    Other arguments map to `faster serve` flags: transform ("train",
    "eval", or a torchvision transform, see faster.transforms), resolution,
    layout ("f32-chw": float32 normalised NCHW, or "u8-hwc": uint8 NHWC to
    normalise on the accelerator), seed, split (of a packed dataset),
    global_shuffle (shards with indexes: one permutation of all records),
    slots (batches in the shared ring for this process, the prefetch depth;
    the server decodes straight into the ring, whose file holds slots + 3
    batches for that: memory is (slots + 3) x batch bytes).
    full_decode=True decodes JPEGs at full size, never scaled in the DCT:
    torchvision's (PIL's) pixels exactly, at more decode time; without it
    the train recipe's random crops decode DCT-scaled where they are at
    least twice the output, and eval (a deterministic Resize + CenterCrop)
    decodes at full size, torchvision's pixels. fast_eval_decode=True lets
    eval decode DCT-scaled too: cheaper, tens of levels off on edges.
    augment_recipe names one of torchvision's classification reference
    recipes (faster.transforms.AUGMENT_RECIPES: "torchvision-ta-wide",
    "torchvision-ra", "torchvision-aa", "torchvision-augmix",
    "torchvision-v2", "torchvision"), with transform="train" or "eval":
    `faster serve --augment-recipe` (docs/pipeline.md, "Named recipes").

    Samplers and seeds (docs/serve.md, "Samplers and seeds"): sampler= is
    DataLoader's, honoured or refused by name, never dropped: a
    DistributedSampler(drop_last=False) or torchvision's RASampler sets
    rank, world_size, shuffle (and repeated_augmentation, RASampler's
    repetitions); any other sampler or iterable of dataset indices is
    iterated each epoch, as DataLoader iterates it, and the server serves
    exactly those positions (indexed data only). batch_sampler= is refused.
    repeated_augmentation=N is RASampler's repeated augmentation. seed=None
    (the default) draws the base seed from torch's generator (generator=,
    else the default one) at the first iteration, as DataLoader draws its
    base seed: torch.manual_seed makes the run reproducible; seed=N fixes
    it. loader.seed() says it; state_dict() carries it.

    device="cuda" (or "cuda:N", a torch.device) yields torch CUDA tensors
    decoded on that GPU by the server's nvJPEG stage and handed over by
    CUDA IPC, with no copy through the host (docs/serve.md, "GPU batches";
    prepared, not yet run on a GPU): images view the server's batch buffer
    (uint8 NHWC or float32 NCHW, as layout=), labels are copied to the GPU.
    A batch is valid until the next is asked for (.clone() keeps one
    longer); its slot goes back to the server once the work queued on the
    current stream by then has finished. It raises RuntimeError where
    torch.cuda is unavailable; device=None or "cpu" is the CPU path.
    cpu_share=F (0 to 1, with device=) has the server decode that share of
    each batch on its CPU workers beside the GPU, the rows spread evenly
    through the batch, so the cores add their rate where the GPU alone
    falls short of the model's.

    Position: state_dict() and load_state_dict() save and restore the exact
    position within an epoch (torchdata's StatefulDataLoader protocol).

    Input: stats() says after each epoch how much of the loop's time went
    to waiting for input, the loader's ceiling and its limiting stage;
    report=True prints it at the end of every epoch (report=callable
    receives the line instead). clock= replaces time.perf_counter.

    label_offset is added to every stored label: -1 for TensorFlow's
    ImageNet shards, whose image/class/label counts from 1. classes= gives
    the number of classes of data that does not record it (shards without
    a manifest): a label outside [0, classes) is a damaged sample, and
    1-based labels stop with a hint to pass label_offset=-1. A sample
    without a label is damaged, unless unlabeled=True (WebDataset samples
    without a .cls member, served as label 0).

    Damaged samples: on_error="stop" (default) raises ServerError at the
    first, naming file and offset; on_error="skip" skips them (the padding
    that keeps ranks in step makes up for them), fails only beyond max_bad (a
    count, or a percentage string like "0.1%"), and lists them in the file
    quarantine (JSON lines; quarantine.rankN with world_size above 1) when
    the loader closes, as `faster bench load --on-error skip` does.
    """

    def __init__(self, data, batch_size=256, transform=None, rank=None, world_size=None,
                 seed=None, epoch=0, workers=None, resolution=224, layout="f32-chw", binary=None,
                 drop_last=False, slots=4, split=None, output=None, shm_dir="/dev/shm",
                 shuffle=None, label_offset=0, on_error="stop", max_bad=None, quarantine=None,
                 num_workers=None, pin_memory=False, exact=False, report=False, clock=None,
                 global_shuffle=False, classes=None, unlabeled=False, full_decode=False, augment_recipe=None,
                 fast_eval_decode=False, sampler=None, batch_sampler=None, generator=None,
                 repeated_augmentation=None, device=None, cpu_share=0.0):
        # device="cuda": checked first, refused where torch.cuda cannot
        # take the batches (_device.require), before any server starts.
        self.device = _device.parse(device)
        if self.device is not None:
            # "cuda" alone is torch's current device, as torch reads it.
            self.device = _device.resolve(self.device, _device.require(self.device))
        self._user_dataset = None
        if _datasets.is_dataset(data):
            # A torchvision dataset object, as DataLoader takes it: its files,
            # split and transform (faster.datasets), and DataLoader's default
            # of no shuffle.
            self._user_dataset = data
            data, dsplit, dtransform, indices = _datasets.from_dataset(data)
            name = type(self._user_dataset).__name__
            if split is not None and dsplit is not None and split != dsplit:
                raise ValueError("faster: split=%r, but the %s object is its %r split" % (split, name, dsplit))
            split = split if dsplit is None else dsplit
            if transform is None:
                if dtransform is None:
                    raise ValueError("faster: the %s object has no transform: faster.Loader yields tensors, so it "
                                     "needs one ending in ToTensor (or PILToTensor + ConvertImageDtype), or "
                                     "transform=" % name)
                transform = dtransform
            if indices is not None:  # a Subset: its positions, shuffled within if asked
                if sampler is not None:
                    raise ValueError("faster: sampler= with a Subset: give the sampler the Subset's indices")
                if shuffle:
                    import torch.utils.data as tud
                    sampler = tud.SubsetRandomSampler(indices, generator=generator)
                else:
                    sampler = indices
                shuffle = None
            elif shuffle is None and sampler is None:
                shuffle = False
        transform = "train" if transform is None else transform
        split = "train" if split is None else split
        if workers is not None and num_workers is not None:
            raise ValueError("faster: give num_workers (DataLoader's meaning) or workers, not both")
        if num_workers is not None:
            # DataLoader's 0 loads in the main process, one sample at a time:
            # here that is one decode thread in the server.
            if isinstance(num_workers, bool) or not isinstance(num_workers, int) or num_workers < 0:
                raise ValueError("faster: num_workers=%r: want an integer of at least 0" % (num_workers,))
            threads = max(num_workers, 1)
        else:
            threads = 0 if workers is None else workers  # workers=0: all cores (the server decides)
        # Types here; the values are the server's to check (loader.Spec's
        # Validate), and its problems come back named by argument (_spec_error).
        for name, v in (("batch_size", batch_size), ("resolution", resolution), ("slots", slots), ("workers", threads)):
            if isinstance(v, bool) or not isinstance(v, int):
                raise ValueError("faster: %s=%r: want an integer" % (name, v))
        if slots < 1:  # serve's own setting, not the loader's
            raise ValueError("faster: slots=%r: want an integer of at least 1" % (slots,))
        cap = WORKERS_PER_CPU * (os.cpu_count() or 1)
        if threads > cap:
            # As DataLoader warns of more workers than the machine suggests;
            # the server caps them the same way (a huge count only takes
            # memory: each thread holds an image's decode).
            warnings.warn("faster: num_workers=%d on %d CPUs: using %d (more than %d per CPU only add memory "
                          "and contention)" % (threads, os.cpu_count() or 1, cap, WORKERS_PER_CPU))
            threads = cap
        plan = _sampler.resolve(sampler, batch_sampler, shuffle, rank, world_size)
        if plan.mapped is not None:  # DistributedSampler, RASampler: their ranks and shuffle
            rank, world_size, shuffle = plan.rank, plan.world_size, plan.shuffle
        if repeated_augmentation is not None:
            if isinstance(repeated_augmentation, bool) or not isinstance(repeated_augmentation, int) or \
                    not 0 <= repeated_augmentation <= 64:
                raise ValueError("faster: repeated_augmentation=%r: want an integer from 0 (off) to 64"
                                 % (repeated_augmentation,))
            if plan.repeats and plan.repeats != repeated_augmentation:
                raise ValueError("faster: repeated_augmentation=%d, but sampler=RASampler repeats %d times"
                                 % (repeated_augmentation, plan.repeats))
            plan.repeats = repeated_augmentation
        if plan.repeats and plan.order is not None:
            raise ValueError("faster: repeated_augmentation with sampler=%s: the sampler's order is the whole order"
                             % type(sampler).__name__)
        self._plan, self._user_sampler, self._generator = plan, sampler, generator
        self._sampler_epoch = getattr(sampler, "epoch", None)
        self.rank, self.world_size = _default_rank(rank, world_size)
        if output is None:
            output = "torch" if importlib.util.find_spec("torch") is not None else "numpy"
        if self.device is not None and output != "torch":
            raise ValueError("faster: device=%r with output=%r: the GPU's batches are torch CUDA tensors "
                             "(leave output= out, or 'torch')" % (device, output))
        if output not in ("torch", "numpy"):
            raise ValueError("faster: output %r: want 'torch' or 'numpy'" % (output,))
        for name, v in (("split", split), ("layout", layout), ("shm_dir", shm_dir)):
            if not isinstance(v, str):
                raise ValueError("faster: %s=%r: want a string" % (name, v))
        self._seed = seed  # None: drawn from torch's generator at the first iteration (_sampler.draw_seed)
        self._seed_given = seed is not None
        seed = 0 if seed is None else seed  # the server's until the client sends its own
        self._server_seed = seed
        for name, v in (("seed", seed), ("epoch", epoch), ("label_offset", label_offset)):
            if isinstance(v, bool) or not isinstance(v, int):
                raise ValueError("faster: %s=%r: want an integer" % (name, v))
        if seed < 0 or epoch < 0:
            raise ValueError("faster: seed=%d, epoch=%d: want integers of at least 0" % (seed, epoch))
        if epoch > P.MAX_EPOCH or seed >= 1 << 64:
            raise ValueError("faster: seed=%d, epoch=%d: want a seed below 2**64 and an epoch of at most %d"
                             % (seed, epoch, P.MAX_EPOCH))
        if augment_recipe is not None and not isinstance(transform, str):
            raise ValueError("faster: augment_recipe=%r with a torchvision transform: give one or the other "
                             "(the Compose says the recipe)" % (augment_recipe,))
        if augment_recipe is not None and not isinstance(augment_recipe, str):
            raise ValueError("faster: augment_recipe=%r: want a recipe's name" % (augment_recipe,))
        tspec = _transform_spec(transform, augment_recipe)
        self._ops = tspec.get("augment")
        self.output = output
        self.data = os.fspath(data)
        self.transform = transform
        self.epoch = int(epoch)  # the epoch the next iteration runs
        self.batch_size = int(batch_size)
        self.num_workers = threads if num_workers is None else num_workers
        self.pin_memory = bool(pin_memory)
        self.exact = bool(exact)
        self.shm_dir = shm_dir
        self._proc = None
        self._sock = None
        self._mm = None
        self._slots = []
        self._run = None  # the latest iteration (_Run)
        self._reported = False  # a server failure was raised already
        self._closed = False
        self._err = None
        self._phase = "before it started"
        self.drop_last = bool(drop_last)
        self._buf = bytearray(64 << 10)
        self._clock = clock
        self._report = report
        self._stats = None
        self._resume = None  # (epoch, state JSON bytes) the next iteration of that epoch resumes from
        self._pos = None  # the position served: see state_dict
        self._pinned_warned = False
        self._ring = None  # a _PinnedRing with pin_memory=True on a CUDA machine
        self._dev = None  # a _device.DeviceRing with device= (the server's batch buffers)
        self._depth = slots  # slots=: at most as many batches owned behind fences
        self._sampler = None
        self._dataset = None
        self.last_keys = []  # the keys of the batch last yielded (paths, for an ImageFolder)
        # The loader as a loader.Spec (JSON), sent to `faster serve --spec -`
        # on its stdin: the server checks every value and names each problem
        # by its field, which _spec_error tells by this argument's name.
        if classes is not None and (isinstance(classes, bool) or not isinstance(classes, int) or classes < 1):
            raise ValueError("faster: classes=%r: want a positive integer" % (classes,))
        if max_bad is not None and (isinstance(max_bad, bool) or not isinstance(max_bad, (int, str))):
            raise ValueError("faster: max_bad=%r: want a count or a percentage string like '0.1%%'" % (max_bad,))
        if not isinstance(on_error, str):
            raise ValueError("faster: on_error=%r: want 'stop' or 'skip'" % (on_error,))
        spec = {"path": self.data, "split": split, "batch": batch_size, "resolution": resolution, "layout": layout,
                "workers": threads, "world_size": self.world_size, "rank": self.rank, "seed": seed,
                "label_offset": label_offset, "drop": bool(drop_last), "exact": bool(exact),
                "global_shuffle": bool(global_shuffle), "unlabeled": bool(unlabeled),  # unlabeled: label 0, not damage
                "full_decode": bool(full_decode),  # never DCT-scaled: PIL's pixels exactly
                "fast_eval_decode": bool(fast_eval_decode),  # eval DCT-scaled too: not PIL's pixels
                "repeated_augmentation": int(plan.repeats or 0),  # RASampler
                "classes": classes or 0, "shuffle": None if shuffle is None else bool(shuffle), "on_error": on_error}
        if plan.order is not None:
            spec["sampler"] = "indices"  # the client sends each epoch's order
        if max_bad is not None:
            spec["max_bad"] = max_bad
        if quarantine is not None:
            spec["quarantine"] = os.fspath(quarantine)
        spec.update(tspec)
        if self.device is not None:
            spec["device"] = "cuda:%d" % self.device  # the server decodes on that GPU (docs/serve.md "GPU batches")
        if cpu_share:
            if self.device is None:
                raise ValueError("faster: cpu_share=%r: a share of the GPU's batches decoded on the CPU beside it; "
                                 "give device='cuda'" % (cpu_share,))
            spec["cpu_share"] = float(cpu_share)  # the server checks 0..1
        self._spec = spec
        args = [_find_binary(binary), "serve", "--slots", str(slots), "--shm-dir", shm_dir, "--spec", "-"]
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        self._sock = ours
        self._err = tempfile.TemporaryFile()
        try:
            args[2:2] = ["--fd", str(theirs.fileno())]
            self._proc = subprocess.Popen(args, pass_fds=(theirs.fileno(),), stdin=subprocess.PIPE,
                                          stdout=subprocess.DEVNULL, stderr=self._err, env=self._server_env())
        finally:
            theirs.close()  # else the server's death would not reach us as EOF
        try:
            self._proc.stdin.write(json.dumps(spec).encode())
        except BrokenPipeError:
            pass  # it exited: _attach says why
        finally:
            try:
                self._proc.stdin.close()
            except BrokenPipeError:
                pass
        try:
            self._attach()
        except ServerError as e:
            self.close()
            bad = _spec_error(str(e), self._ops, num_workers is not None)
            if bad is not None:
                raise ValueError(bad) from None
            if (plan.order is not None or plan.repeats) and "needs data read by position" in str(e):
                what = "sampler=%s" % type(sampler).__name__ if sampler is not None else \
                    "repeated_augmentation=%d" % plan.repeats
                raise ValueError("faster: %s is honoured on indexed data only (ImageFolder, LMDB, WebDataset, "
                                 "shards with indexes and global_shuffle=True): %s" % (what, e)) from None
            raise
        except BaseException:
            self.close()
            raise
        if self.pin_memory and self._pin and self._dev is None:
            self._ring = _PinnedRing.open(self._mm)

    # --- the control channel ---

    def _fail(self, what):
        """Raises ServerError after the server went away: why, from its exit
        status and stderr; removes a shared-memory file it left."""
        proc = self._proc
        code = None
        if proc is not None:
            try:
                code = proc.wait(timeout=1.0)
            except subprocess.TimeoutExpired:
                proc.kill()
                code = proc.wait()
            for p in glob.glob(os.path.join(self.shm_dir, "%s%d-*" % (P.SHM_PREFIX, proc.pid))):
                try:
                    os.unlink(p)
                except OSError:
                    pass
        msg = self._stderr_tail()
        self._reported = True
        self._closed_sock()
        status = "exited with status %s" % code if code is not None and code >= 0 else \
            "was killed by signal %s" % (-code if code is not None else "?")
        raise ServerError("faster: the server (pid %s) %s %s%s" % (
            proc.pid if proc else "?", status, what, (": " + msg) if msg else ""))

    def _closed_sock(self):
        if self._sock is not None:
            self._sock.close()
            self._sock = None

    def _recv_exact(self, n):
        buf = bytearray(n)
        view = memoryview(buf)
        got = 0
        sock = self._sock
        if sock is None:
            raise ServerError("faster: the loader is closed")
        while got < n:
            r, _, _ = select.select([sock], [], [], 0.25)
            if not r:
                if self._proc.poll() is not None:  # died, EOF not seen yet
                    self._fail(self._phase)
                continue
            try:
                k = sock.recv_into(view[got:], n - got)
            except (ConnectionResetError, BrokenPipeError):
                k = 0
            if k == 0:
                self._fail(self._phase)
            got += k
        return buf

    def _recv(self):
        head = self._recv_exact(P.FRAME_HEAD.size)
        n, typ = P.FRAME_HEAD.unpack(head)
        if n < 1 or n > P.MAX_FRAME:
            raise ServerError("faster: protocol error: frame of %d bytes" % n)
        payload = self._recv_exact(n - 1) if n > 1 else b""
        if typ == P.ERROR:
            msg = bytes(payload).decode("utf-8", "replace")
            self._reported = True
            self._closed_sock()
            raise ServerError("faster: the server failed: " + msg)
        return typ, payload

    def _send(self, typ, payload=b""):
        if self._sock is None:
            raise ServerError("faster: the loader is closed")
        try:
            self._sock.sendall(P.frame(typ, payload))
        except (BrokenPipeError, ConnectionResetError):
            self._fail("while the loader wrote to it")

    def _server_env(self):
        """The server's environment: this process's (None), and with
        device= the CUDA libraries beside torch (its lib/ and the nvidia
        wheels') after LD_LIBRARY_PATH's own folders, so the server finds
        libnvjpeg and libcudart where only torch's wheels hold them (found
        by soname first, wherever the system has them)."""
        if self.device is None:
            return None
        import torch
        dirs = _device.torch_lib_dirs(torch)
        if not dirs:
            return None
        env = dict(os.environ)
        env["LD_LIBRARY_PATH"] = os.pathsep.join([p for p in env.get("LD_LIBRARY_PATH", "").split(os.pathsep) if p] + dirs)
        return env

    def _attach(self):
        self._phase = "before it was ready"
        typ, payload = self._recv()
        if typ != P.HELLO:
            raise ServerError("faster: protocol error: %r before hello" % typ)
        h = json.loads(bytes(payload))
        if h["version"] != P.VERSION:
            raise ServerError("faster: server speaks protocol %d, this client %d" % (h["version"], P.VERSION))
        fd = os.open(h["path"], os.O_RDWR)
        try:
            self._mm = mmap.mmap(fd, h["size"], mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
        finally:
            os.close(fd)
            try:
                os.unlink(h["path"])  # mapped by both: no name needed any more
            except FileNotFoundError:
                pass
        self._send(P.ATTACH)
        self._phase = "while a batch was awaited"
        hdr = P.FILE_HEADER.unpack_from(self._mm, 0)
        if hdr[0] != P.MAGIC or hdr[1] != P.VERSION or hdr[2] != h["slots"] or hdr[3] != h["slot_bytes"]:
            raise ServerError("faster: shared memory header does not match the hello")
        self.hello = h
        self.classes = h.get("classes") or []
        dtype = np.dtype(h["dtype"])
        shape = tuple(h["shape"])
        batch = h["batch"]
        count = batch * int(np.prod(shape))
        torch = None
        if self.output == "torch":
            import torch
        if h.get("device"):
            # The rows are in the server's batch buffers, handed over once
            # (the DEVICE frame); the file's slots hold headers and labels.
            typ, payload = self._recv()
            if typ != P.DEVICE:
                raise ServerError("faster: protocol error: %r after a device hello, want the device frame" % typ)
            self._dev = self._open_device(h, payload, torch)
            # The client never owns all the slots: the stage decodes into one.
            self._depth = max(1, min(self._depth, h["slots"] - 1))
        for i in range(h["slots"]):
            base = h["header_bytes"] + i * h["slot_bytes"]
            if self._dev is not None:
                im = self._dev.images[i]
            else:
                im = np.frombuffer(self._mm, dtype, count, base + h["images_offset"]).reshape((batch,) + shape)
            lb = np.frombuffer(self._mm, np.int64, batch, base + h["labels_offset"])
            if torch is not None:
                if self._dev is None:
                    im = torch.from_numpy(im)
                lb = torch.from_numpy(lb)
            self._slots.append((im, lb))

    def _open_device(self, hello, payload, torch):
        """The DEVICE frame's buffers (_device.DeviceRing); a refusal is a
        ServerError naming the device."""
        try:
            return _device.DeviceRing(hello, payload, torch=torch)
        except (ValueError, RuntimeError, OSError) as e:
            raise ServerError("faster: device %s: %s" % (hello.get("device"), e)) from None

    # --- iteration ---

    def set_epoch(self, epoch):
        """Sets the epoch the next iteration runs (shuffle and augmentation
        seeds), like DistributedSampler.set_epoch. Without it every new
        iteration runs the next epoch, as DataLoader(shuffle=True) draws a
        new order each time it is iterated."""
        if isinstance(epoch, bool) or not isinstance(epoch, int) or not 0 <= epoch <= P.MAX_EPOCH:
            raise ValueError("faster: set_epoch(%r): want an integer from 0 to %d" % (epoch, P.MAX_EPOCH))
        self.epoch = int(epoch)
        s = self._user_sampler
        if s is not None and hasattr(s, "set_epoch"):
            s.set_epoch(int(epoch))  # the user's sampler follows, as its own set_epoch would
            self._sampler_epoch = getattr(s, "epoch", None)

    def __len__(self):
        """Batches per epoch on this rank: the same on every rank, as the
        server computes it from every rank's sample count (see Batch); with
        exact=True this rank's own (ranks may differ by one)."""
        if self._plan.order is not None:
            # DataLoader's len() of a sampler's batches.
            n = len(self._plan.order)
            return n // self.batch_size if self.drop_last else (n + self.batch_size - 1) // self.batch_size
        steps = self.hello.get("steps", -1)
        if steps < 0:
            raise TypeError("faster: the epoch's length is unknown (shards without indexes or manifest)")
        return steps

    def __iter__(self):
        for b in self.batches():
            if self._ring is None and self._dev is None and self.pin_memory and self._pin:
                # The ring could not be registered: pinned copies.
                yield b.images.pin_memory(), b.labels.pin_memory()
            else:
                yield b.images, b.labels  # a pinned ring's views are pinned as they lie

    @property
    def _pin(self):
        """Whether pin_memory can pin: torch with a CUDA device. Without
        one, pin_memory=True does nothing and says so once, as torch's
        DataLoader does."""
        if self.output != "torch":
            return False
        import torch
        if torch.cuda.is_available():
            return True
        if not self._pinned_warned:
            self._pinned_warned = True
            warnings.warn("faster: 'pin_memory' argument is set as true but no accelerator is found, "
                          "then device pinned memory won't be used.")
        return False

    def batches(self):
        """Yields the next epoch's Batch tuples (images, labels, keys, epoch,
        index, valid, repeats), with the lifetime described in the class
        docs. The epoch is self.epoch (set_epoch); starting it makes
        self.epoch the one after.

        One iteration at a time: a new one ends the last (an abandoned or
        broken-off iterator), and the last raises RuntimeError if it is
        resumed afterwards (nested iteration of one Loader), rather than
        ending silently. Iterating one Loader from two threads at once
        raises RuntimeError."""
        prev = self._run
        if prev is not None and not prev.finished:
            if prev.executing:
                raise RuntimeError("faster: this Loader is being iterated in another thread; one iteration "
                                   "at a time (open a Loader per thread)")
            self._end_run(prev)
            prev.superseded = True
        m = self._user_sampler
        if m is not None and getattr(m, "epoch", None) != self._sampler_epoch:
            # The script called its sampler's set_epoch (DistributedSampler,
            # RASampler): that epoch, as DataLoader would serve it.
            self._sampler_epoch = m.epoch
            self.set_epoch(m.epoch)
        epoch = self.epoch
        self.epoch = epoch + 1
        state = None
        if self._resume is not None and self._resume[0] == epoch:
            state = self._resume[1]
        self._resume = None
        run = self._run = _Run(epoch)
        return self._run_epoch(run, state)

    def _run_epoch(self, run, state):
        epoch = run.epoch
        run.check()
        if self._closed:
            raise ServerError("faster: the loader is closed")
        # Before the run starts: a sampler that fails leaves no epoch asked for.
        self._send_seed_and_order()
        run.executing = True
        payload = struct.pack("<q", epoch)
        prior, steps0 = [], 0
        pos0 = self._pos
        if state is not None:
            payload += json.dumps(state).encode()
            one = _merge(state) if isinstance(state, list) else state
            if self.hello.get("stream"):
                seg = (one.get("segments") or [{}])[-1]
                steps0 = seg.get("steps", 0)  # a stream counts from the epoch's start
            else:
                prior = one.get("segments") or []
        self._pos = {"epoch": epoch, "consumed": 0, "steps": steps0, "prior": prior, "done": False}
        run.meter = InputMeter(self._clock)
        run.meter.begin()
        run.started = True
        try:
            self._send(P.EPOCH, payload)
            while True:
                self._hand_back(run)
                run.meter.waiting()
                typ, payload = self._recv()
                if typ == P.END:
                    self._hand_back(run, every=True)
                    run.finished = True
                    self._pos["done"] = not payload[P.END_FIXED.size - 1]
                    self._end_epoch(run.meter, epoch, payload)
                    return
                if typ == P.REFUSED:
                    # Nothing ran: the loader is where it was, and goes on.
                    run.finished = True
                    self._pos, self.epoch = pos0, epoch
                    raise ValueError("faster: the server refused epoch %d%s: %s" % (
                        epoch, " from the loaded state" if state is not None else "",
                        bytes(payload).decode("utf-8", "replace")))
                if typ != P.READY:
                    raise ServerError("faster: protocol error: frame %r during an epoch" % typ)
                slot, e, index, valid, rows, repeats, consumed = P.READY_FIXED.unpack_from(payload)
                run.meter.got(valid)
                keys = bytes(payload[P.READY_FIXED.size:]).decode("utf-8", "surrogateescape").split("\0") if valid else []
                run.held = slot
                if consumed >= 0:
                    self._pos["consumed"] = consumed
                self._pos["steps"] += 1
                im, lb = self._slots[slot]
                lb = lb[:valid]
                if self._dev is not None and self._dev.device is not None:
                    # A copy (the labels live in the file's slot), pinned
                    # and queued: from pageable memory torch's copy waits
                    # for the stream, so the host could never run ahead of
                    # the GPU; the pinned block is torch's until the copy
                    # is done (its caching host allocator records it).
                    lb = lb.pin_memory().to(self._dev.device, non_blocking=True)
                self.last_keys = keys
                run.executing = False
                yield Batch(im[:valid], lb, keys, e, index, valid, repeats)
                if self._closed:
                    raise ServerError("faster: the loader is closed")
                run.check()
                run.executing = True
        finally:
            run.executing = False
            if not run.superseded:
                self._end_run(run)

    def seed(self):
        """The base seed of the orders and augmentations: seed=, else the
        one drawn from torch's generator (generator=, else the default) at
        the first iteration, as DataLoader draws its base seed, so that
        torch.manual_seed(s) makes the run reproducible; on several ranks
        rank 0's, broadcast. (Asked before the first iteration, it is drawn
        then, and that iteration draws no more.)"""
        if self._seed is None:
            self._seed = _sampler.shared_seed(_sampler.draw_seed(self._generator), self.world_size, self._seed_matters())
            self._drawn_early = True
        return self._seed

    def _seed_matters(self):
        """Whether the seed changes what is served: a shuffled order, or a
        transform other than the deterministic eval recipe."""
        return bool(self.hello.get("shuffle")) or self.transform != "eval" or bool(self.hello.get("repeated_augmentation"))

    def _send_seed_and_order(self):
        """Before an epoch: the seed, when the server has another, and the
        epoch's order of a sampler= iterated now, as DataLoader iterates
        it. Every iteration draws from torch's generator as DataLoader's
        does (its base seed; the first is the seed without seed=), so that
        the script's own draws and a sampler's see the generator as they
        would beside a DataLoader."""
        if getattr(self, "_drawn_early", False):
            self._drawn_early = False
        else:
            draw = _sampler.draw_seed(self._generator)
            if self._seed is None:
                self._seed = _sampler.shared_seed(draw, self.world_size, self._seed_matters())
        seed = self._seed
        if seed != self._server_seed:
            self._send(P.SEED, struct.pack("<Q", seed))
            self._server_seed = seed
        if self._plan.order is not None:
            idx = _sampler.epoch_order(self._plan.order, self.hello["dataset_len"])
            for part in _sampler.order_frames(idx):
                self._send(P.ORDER, part)

    def _hand_back(self, run, every=False):
        """Hands the slot the last batch viewed back to the server. With a
        pinned ring the slot is owned until the work queued on the current
        CUDA stream when the next batch was asked for (the batch's
        .cuda(non_blocking=True) copy) has finished with it: each slot
        waits behind its fence, handed back once the fence has passed, or
        waited for when the server would otherwise run short of slots
        (as many pending as slots=, the prefetch depth: the ring's three
        more are the pipeline's, decoding in place), or at the epoch's end
        (every=True)."""
        ring = self._ring if self._dev is None else self._dev
        if run.held is not None:
            if ring is None:
                self._send(P.FREE, run.held.to_bytes(4, "little"))
            else:
                run.pending.append((run.held, ring.fence()))
            run.held = None
        while run.pending and (every or len(run.pending) >= self._depth or ring.passed(run.pending[0][1])):
            slot, fence = run.pending.popleft()
            if not ring.passed(fence):
                ring.wait(fence)
            self._send(P.FREE, slot.to_bytes(4, "little"))

    def _end_run(self, run):
        """Ends an iteration stopped early: hands its slot back, cancels the
        epoch and drains its frames to the end frame."""
        if run.finished or not run.started:
            run.finished = True
            return
        run.finished = True
        if self._closed or self._sock is None:
            return
        try:
            self._hand_back(run, every=True)
            self._send(P.CANCEL)
            while True:
                typ, payload = self._recv()
                if typ == P.END:
                    self._end_epoch(run.meter, run.epoch, payload, cancelled=True)
                    break
                if typ == P.READY:
                    self._send(P.FREE, payload[:4])
        except ServerError:
            pass

    def _end_epoch(self, meter, epoch, payload, cancelled=False):
        extra = bytes(payload[P.END_FIXED.size:])
        server = json.loads(extra) if extra else {}
        self._stats = meter.end(server, epoch, cancelled)
        self._stats["pipeline"] = server.get("stats")
        if self._report and not cancelled:
            line = "faster: epoch %d: %s" % (epoch, self._stats["summary"])
            if callable(self._report):
                self._report(line)
            else:
                print(line, file=sys.stderr, flush=True)

    def stats(self):
        """The last epoch's input report, a dict: seconds, wait_seconds and
        input_wait_share (the share of the loop's time spent waiting for a
        batch), input_bound, images_per_s, consumer_images_per_s (what the
        loop alone would take), loader_ceiling_images_per_s with
        limiting_stage and bottleneck ("decode" is CPU work, "io" reading),
        the pipeline's verdict, loader_cpu_seconds and
        loader_cpu_seconds_per_1000_images (the server's CPU time over the
        epoch, all its threads: what the loading cost, whatever else ran on
        the machine), and summary, the sentence report=True prints at the
        end of every epoch. None before an epoch ended."""
        return None if self._stats is None else dict(self._stats)

    # --- position: the protocol of torchdata's StatefulDataLoader ---

    def state_dict(self):
        """The position served so far, small and JSON-serialisable: the
        epoch and how far this rank got (the batches yielded, the last one
        included). load_state_dict on a fresh loader with the same data and
        arguments serves exactly the rest: of the epoch, or from the next
        epoch when this one ended. With several ranks, a state saved by
        one rank stands for all when they ran in lockstep (as a script that
        checkpoints on rank 0 does); with on_error="skip" gather every
        rank's state (dist.all_gather_object) and load the list, exact
        whatever each skipped. Indexed data (ImageFolder, LMDB,
        WebDataset, shards with indexes) resumes with any world size;
        streamed shards with the same one."""
        h = self.hello
        st = {"version": h["state_version"], "seed": self.seed(), "shuffle": h["shuffle"],
              "samples": h["dataset_len"], "faster": {"world": self.world_size, "rank": self.rank,
                                                      "batch_size": self.batch_size}}
        if h.get("stream"):
            st["stream"] = True
        if h.get("fingerprint"):
            st["fingerprint"] = h["fingerprint"]  # the data it is a position in
        if h.get("repeated_augmentation"):
            st["repeated_augmentation"] = h["repeated_augmentation"]
        pos = self._pos
        if pos is None or pos["done"]:
            st["epoch"] = self.epoch if pos is None else pos["epoch"] + 1
            if self._resume is not None and self._resume[0] == st["epoch"]:
                r = self._resume[1]
                return dict(r[-1] if isinstance(r, list) else r)
            return st
        st["epoch"] = pos["epoch"]
        if self._plan.order is not None:
            raise ValueError("faster: state_dict() within epoch %d of sampler=%s: the position within an order the "
                             "client's sampler gives is not kept (a stateful sampler's own state would be needed); "
                             "save at an epoch's end (its state starts the next epoch)"
                             % (pos["epoch"], type(self._user_sampler).__name__))
        consumed = [-1] * self.world_size
        consumed[self.rank] = pos["consumed"]
        st["segments"] = list(pos["prior"]) + [{"world": self.world_size, "consumed": consumed,
                                                "steps": pos["steps"], "batch": self.batch_size}]
        return st

    def load_state_dict(self, state):
        """Makes the next iteration continue from state (state_dict's, or a
        list of every rank's): it runs the state's epoch from where that
        stopped. set_epoch to another epoch drops it."""
        states = state if isinstance(state, list) else [state]
        if not states or len(states) > P.MAX_WORLD:
            raise ValueError("faster: load_state_dict: a list of %d states: want one per rank (1 to %d)"
                             % (len(states), P.MAX_WORLD))
        seed = self._seed if self._seed_given else None
        if seed is None and isinstance(states[0], dict):
            seed = states[0].get("seed")  # seed= not given: the state's is adopted (checked below)
        hello = dict(self.hello, seed=seed)
        for i, s in enumerate(states):
            _check_state(s, "state" if len(states) == 1 and not isinstance(state, list) else "state[%d]" % i,
                         hello, self.world_size, self.rank)
        first = states[0]
        for i, s in enumerate(states[1:], 1):
            for key in ("epoch", "fingerprint"):
                if s.get(key) != first.get(key):
                    raise ValueError("faster: load_state_dict: state[%d]['%s'] = %r, state[0]'s %r: states of different runs"
                                     % (i, key, s.get(key), first.get(key)))
            a, b = first.get("segments") or [], s.get("segments") or []
            if [g["world"] for g in a] != [g["world"] for g in b]:
                raise ValueError("faster: load_state_dict: state[%d]'s segments (worlds %r) differ from state[0]'s (%r): "
                                 "states of different runs" % (i, [g["world"] for g in b], [g["world"] for g in a]))
        epoch = int(states[0]["epoch"])
        if not self._seed_given:
            self._seed = int(first["seed"])
        self.epoch = epoch
        mid = any(s.get("segments") for s in states)
        if mid and self._plan.order is not None:
            raise ValueError("faster: load_state_dict: a position within epoch %d, and sampler=%s: the client's "
                             "order is sent each epoch and a position within it is not kept; resume at an "
                             "epoch's start" % (epoch, type(self._user_sampler).__name__))
        self._resume = (epoch, state) if mid else None
        self._pos = None

    # --- DataLoader's attributes ---

    @property
    def sampler(self):
        """DistributedSampler's face of the loader: set_epoch(e), len()
        (the samples this rank serves per epoch: its num_samples), epoch,
        num_replicas, rank, shuffle, seed, drop_last. With sampler=, that
        sampler, as DataLoader.sampler is."""
        if self._user_sampler is not None:
            return self._user_sampler
        if self._sampler is None:
            self._sampler = _Sampler(self)
        return self._sampler

    @property
    def dataset(self):
        """The dataset's face: len() (all samples, every rank's), classes,
        class_to_idx, and for an ImageFolder root, samples/imgs/targets as
        torchvision's ImageFolder lists them."""
        if self._user_dataset is not None:
            return self._user_dataset  # DataLoader's: the object it was given
        if self._dataset is None:
            self._dataset = _Dataset(self)
        return self._dataset

    # --- lifetime ---

    @property
    def pid(self):
        """The server's process id."""
        return self._proc.pid if self._proc else None

    def close(self):
        """Stops the server (it exits when the connection closes) and unmaps
        the shared memory. Tensors still viewing it keep the mapping alive
        until they are freed."""
        if self._closed:
            return
        run, self._run = self._run, None
        if run is not None and not run.finished:
            self._end_run(run)
            run.superseded = True  # resuming it raises
        self._closed = True
        if self._dev is not None:
            # Before the server exits and frees its buffers: the IPC
            # mappings closed first (their fences were waited for as the
            # run ended).
            self._slots = []
            self._dev.close()
            self._dev = None
        self._closed_sock()
        failed = None
        if self._proc is not None:
            try:
                code = self._proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                code = self._proc.wait()
            if code is not None and code > 0 and not self._reported:
                # The server failed on its way out (the quarantine list could
                # not be written): a lost list must not pass silently.
                failed = "exited with status %d when the loader closed: %s" % (code, self._stderr_tail())
        self._slots = []
        if self._ring is not None:
            self._ring.close()  # its fences were waited for as the run ended
            self._ring = None
        if self._mm is not None:
            try:
                self._mm.close()
            except BufferError:
                pass  # views still exported: the GC unmaps it later
            self._mm = None
        if self._err is not None:
            self._err.close()
        if failed:
            raise ServerError("faster: the server (pid %d) %s" % (self._proc.pid, failed))

    def _stderr_tail(self):
        try:
            self._err.seek(0)
            return self._err.read()[-2000:].decode("utf-8", "replace").strip()
        except (OSError, ValueError):
            return ""

    def __enter__(self):
        return self

    def __exit__(self, typ, *exc):
        if typ is None:
            self.close()
            return
        try:  # an exception is on its way: do not mask it
            self.close()
        except ServerError:
            pass

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass


class _Run:
    """One iteration of a Loader: its epoch, the slot it holds, and whether
    it ended or a newer iteration superseded it."""

    def __init__(self, epoch):
        self.epoch = epoch
        self.held = None
        # pending: (slot, fence) handed back once the fence has passed
        # (a pinned ring: the copies queued from the slot have finished).
        self.pending = collections.deque()
        self.meter = None
        self.started = False
        self.finished = False
        self.superseded = False
        self.executing = False

    def check(self):
        if self.superseded:
            raise RuntimeError("faster: this iteration of epoch %d was ended by a newer iteration of the same "
                               "Loader (nested iteration?): iterate one epoch at a time, or open a second Loader"
                               % self.epoch)


class _Sampler:
    """What scripts touch of a DistributedSampler (see Loader.sampler)."""

    def __init__(self, loader):
        self._l = loader

    def set_epoch(self, epoch):
        self._l.set_epoch(epoch)

    @property
    def epoch(self):
        return self._l.epoch

    def __len__(self):
        n = self._l.hello.get("samples", -1)
        if n < 0:
            raise TypeError("faster: the epoch's length is unknown (shards without indexes or manifest)")
        return n

    num_replicas = property(lambda self: self._l.world_size)
    rank = property(lambda self: self._l.rank)
    shuffle = property(lambda self: self._l.hello["shuffle"])
    seed = property(lambda self: self._l.seed())
    drop_last = property(lambda self: self._l.drop_last)

    @property
    def num_samples(self):
        return len(self)

    @property
    def total_size(self):
        return len(self) * self._l.world_size


class _Dataset:
    """What scripts touch of a torchvision dataset (see Loader.dataset)."""

    def __init__(self, loader):
        self._l = loader
        self.root = loader.data
        self.transform = loader.transform
        self._samples = None

    def __len__(self):
        return self._l.hello["dataset_len"]

    @property
    def classes(self):
        return list(self._l.classes)

    @property
    def class_to_idx(self):
        return {c: i for i, c in enumerate(self._l.classes)}

    @property
    def samples(self):
        """(path, class index) of every image, in ImageFolder's order."""
        if self._samples is None:
            if self._l.hello.get("kind") != "imagefolder":
                raise AttributeError("faster: samples: the data is %s, not an ImageFolder tree; "
                                     "len(), classes and class_to_idx are there" % self._l.hello.get("kind"))
            # The folder the server read: root/<split> for a split layout.
            folder = self._l.hello.get("root") or self.root
            self._samples = _list_image_folder(folder, self.class_to_idx)
            if len(self._samples) != len(self):
                raise RuntimeError("faster: %s lists %d images here and %d in the server" % (
                    folder, len(self._samples), len(self)))
        return self._samples

    imgs = samples

    @property
    def targets(self):
        return [t for _, t in self.samples]

    def __getitem__(self, i):
        raise TypeError("faster: the loader's dataset is not indexable: the server decodes and "
                        "batches the samples (iterate the Loader)")


# torchvision's IMG_EXTENSIONS, which the server's ImageFolder accepts too.
_IMG_EXTENSIONS = (".jpg", ".jpeg", ".png", ".ppm", ".bmp", ".pgm", ".tif", ".tiff", ".webp")


def _list_image_folder(root, class_to_idx):
    """torchvision.datasets.folder.make_dataset's listing: every class
    folder walked in sorted order (links followed), files sorted, by
    extension."""
    out = []
    for cls in sorted(class_to_idx):
        d = os.path.join(os.path.expanduser(root), cls)
        for base, _, names in sorted(os.walk(d, followlinks=True)):
            for name in sorted(names):
                if name.lower().endswith(_IMG_EXTENSIONS):
                    out.append((os.path.join(base, name), class_to_idx[cls]))
    return out


def _check_state(s, where, hello, world_size, rank):
    """Raises ValueError naming the field of s (a state_dict, or one rank's
    of a list) that is malformed, out of bounds (_protocol's MAX_*, as the
    server's loader.State.Validate), or of another loader: version, seed,
    shuffle, samples, streamed or not, and the data (fingerprint; a state
    saved before fingerprints has none and is checked without it)."""
    def bad(field, v, want):
        raise ValueError("faster: load_state_dict: %s%s = %r: %s" % (where, field, v, want))

    def integer(field, v, lo, hi):
        if isinstance(v, bool) or not isinstance(v, int) or not lo <= v <= hi:
            bad(field, v, "want an integer from %d to %d" % (lo, hi))

    if not isinstance(s, dict):
        raise ValueError("faster: load_state_dict: %s has type %s, not a faster.Loader state (a dict from state_dict())"
                         % (where, type(s).__name__))
    for key in ("version", "epoch", "seed", "shuffle", "samples"):
        if key not in s:
            raise ValueError("faster: load_state_dict: %s has no '%s': not a faster.Loader state (keys %s)"
                             % (where, key, sorted(map(str, s))[:10]))
    integer("['version']", s["version"], 0, 1 << 31)
    integer("['epoch']", s["epoch"], 0, P.MAX_EPOCH)
    integer("['seed']", s["seed"], 0, (1 << 64) - 1)
    integer("['samples']", s["samples"], 0, 1 << 62)
    for key in ("shuffle", "stream"):
        if key in s and not isinstance(s[key], bool):
            bad("['%s']" % key, s[key], "want True or False")
    fp = s.get("fingerprint")
    if fp is not None and (not isinstance(fp, str) or len(fp) > P.MAX_FINGERPRINT):
        bad("['fingerprint']", fp, "want a string of at most %d characters" % P.MAX_FINGERPRINT)
    # Of this loader?
    got = {"version": s["version"], "seed": s["seed"], "shuffle": s["shuffle"], "samples": s["samples"],
           "stream": bool(s.get("stream")), "repeated_augmentation": s.get("repeated_augmentation", 0)}
    want = {"version": hello["state_version"], "seed": hello["seed"], "shuffle": hello["shuffle"],
            "samples": hello["dataset_len"], "stream": bool(hello.get("stream")),
            "repeated_augmentation": hello.get("repeated_augmentation", 0)}
    diff = [k for k in got if got[k] != want[k]]
    if diff:
        raise ValueError("faster: load_state_dict: %s is of another loader: its %s; this loader has %s"
                         % (where, ", ".join("%s %r" % (k, got[k]) for k in diff),
                            ", ".join("%s %r" % (k, want[k]) for k in diff)))
    mine = hello.get("fingerprint")
    if fp and mine and fp != mine:
        raise ValueError("faster: load_state_dict: %s was saved on other data (fingerprint %s); this loader's data "
                         "has fingerprint %s (the kind, class names and the samples' or files' names, in order)"
                         % (where, fp, mine))
    segs = s.get("segments")
    if segs is None:
        return
    if not isinstance(segs, list) or len(segs) > P.MAX_SEGMENTS:
        bad("['segments']", segs if not isinstance(segs, list) else "a list of %d" % len(segs),
            "want a list of at most %d segments" % P.MAX_SEGMENTS)
    n = s["samples"]
    for i, g in enumerate(segs):
        f = "['segments'][%d]" % i
        if not isinstance(g, dict) or "world" not in g or "consumed" not in g:
            bad(f, g, "want a dict with 'world' and 'consumed'")
        integer(f + "['world']", g["world"], 1, P.MAX_WORLD)
        c = g["consumed"]
        if not isinstance(c, list) or len(c) != g["world"]:
            bad(f + "['consumed']", c if not isinstance(c, list) else "%d counts" % len(c),
                "want a list of %d counts (one per rank of world %d)" % (g["world"], g["world"]))
        for r, v in enumerate(c):
            integer(f + "['consumed'][%d]" % r, v, -1, n if n > 0 else 1 << 62)
        if all(v < 0 for v in c):
            bad(f + "['consumed']", c, "want at least one rank's count (-1 is unknown)")
        integer(f + "['steps']", g.get("steps", 0), 0, P.MAX_STEPS)
        integer(f + "['batch']", g.get("batch", 0), 0, P.MAX_BATCH)
    if s.get("stream") and segs:
        # A stream's order depends on the ranks: it resumes with the same.
        g = segs[-1]
        if len(segs) > 1 or g["world"] != world_size:
            bad("['segments']", [x["world"] for x in segs],
                "a streamed dataset resumes with the ranks it was saved with, here %d (pack with indexes or use "
                "global_shuffle=True to change the world size)" % world_size)
        rows = hello.get("samples", -1)
        if rows >= 0 and g.get("steps", 0) * g.get("batch", 0) > rows:
            bad("['segments'][0]['steps']", g.get("steps"), "%d batches of %d rows: more than this rank's epoch has (%d)"
                % (g.get("steps"), g.get("batch"), rows))


def _merge(states):
    """Every rank's state as one: each segment's counts from the rank that
    knows them (the server checks them again: loader.MergeStates)."""
    out = dict(states[0])
    segs = [dict(g, consumed=list(g["consumed"])) for g in out.get("segments") or []]
    for s in states[1:]:
        for g, h in zip(segs, s.get("segments") or []):
            g["consumed"] = [a if a >= 0 else b for a, b in zip(g["consumed"], h["consumed"])]
    out["segments"] = segs
    return out


def _transform_spec(transform, augment_recipe=None):
    """The spec's transform: {"transform": "train" or "eval", "recipe": the
    named recipe} for a name, or {"transform": ..., "augment": the op specs}
    for a torchvision transform (faster.transforms.from_torchvision), in the
    user's order; its "transform" is "eval" when no op draws at random
    (the order is kept unless shuffle= says otherwise), else "train"."""
    if isinstance(transform, str):
        if transform not in ("train", "eval"):
            raise ValueError("faster: transform=%r: want 'train', 'eval' or a torchvision transform" % (transform,))
        spec = {"transform": transform}
        if augment_recipe is not None:
            spec["recipe"] = {"augment_recipe": augment_recipe}
        return spec
    from .transforms import from_torchvision
    ops = from_torchvision(transform)
    random = any(op.get("op", "").startswith("Random") or op.get("op") in _POLICIES for op in ops)
    return {"transform": "train" if random else "eval", "augment": ops}


# The ops that draw at random whose names do not start with Random.
_POLICIES = ("TrivialAugmentWide", "RandAugment", "AutoAugment", "AugMix", "ColorJitter", "GaussianBlur")

# loader.Spec's fields by faster.Loader's argument names (those not the same).
_ARGUMENTS = {"batch": "batch_size", "drop": "drop_last", "recipe.augment_recipe": "augment_recipe",
              "sampler": "sampler", "repeated_augmentation": "repeated_augmentation", "path": "data"}


def _spec_error(message, ops, num_workers):
    """The server's refusal of the spec (`faster serve --spec`: exit status 2,
    one problem a line, each "--spec: field: what"), told by faster.Loader's
    argument names, and a transform's op by its place in the user's
    transform; None when message is not that."""
    import re
    if "exited with status 2" not in message:
        return None
    found = re.findall(r"--spec(?: \([a-z ]+\))?: ([a-z_]+(?:\[\d+\])?(?:\.[a-z_]+)?): ([^\n]*)", message)
    if not found:
        return None
    from .transforms import describe
    out = []
    for field, what in found:
        if field.startswith("augment["):
            name = "transform " + describe(ops, field)
        elif field == "workers":
            name = "num_workers" if num_workers else "workers"
        elif field.startswith("recipe.") and field != "recipe.augment_recipe":
            name = "augment_recipe (%s)" % field[len("recipe."):]
        else:
            name = _ARGUMENTS.get(field, field)
        out.append("%s: %s" % (name, what))
    return "faster: " + "; ".join(out)


class _PinnedRing:
    """pin_memory=True on a machine with a CUDA device: the shared-memory
    ring registered with CUDA (cudaHostRegister, through torch's binding of
    the CUDA runtime), so a batch is pinned where it lies and
    .cuda(non_blocking=True) on it is an asynchronous copy at pinned speed
    with no copy in Python (torch's pin_memory() copies the batch into its
    own pinned buffer first). A slot is owned until its fence has passed:
    fence() marks the work queued on the current CUDA stream when the next
    batch is asked for, the batch's copy among it (Loader._hand_back)."""

    def __init__(self, mm):
        import torch
        self._cuda = torch.cuda
        self._view = np.frombuffer(mm, np.uint8)  # keeps the mapping alive while registered
        self.ptr, self.size = self._view.ctypes.data, self._view.nbytes
        err = torch.cuda.cudart().cudaHostRegister(self.ptr, self.size, 0)
        if int(err) != 0:
            self._view = None
            raise RuntimeError("cudaHostRegister(%d bytes): CUDA error %d" % (self.size, int(err)))

    @classmethod
    def open(cls, mm):
        """The ring registered, or None with a warning saying why (the
        loader then yields pinned copies, as DataLoader's pin_memory)."""
        try:
            return cls(mm)
        except Exception as e:  # an old torch without the binding, a driver refusing it
            warnings.warn("faster: pin_memory: the shared-memory ring could not be registered with CUDA (%s): "
                          "yielding pinned copies" % e)
            return None

    def fence(self):
        e = self._cuda.Event()
        e.record()  # on the current stream
        return e

    @staticmethod
    def passed(fence):
        return fence.query()

    @staticmethod
    def wait(fence):
        fence.synchronize()

    def close(self):
        if self._view is not None:
            self._cuda.cudart().cudaHostUnregister(self.ptr)
            self._view = None
