"""The iterable Loader: starts `faster serve`, maps its shared-memory ring
and yields batches that view it."""
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
from typing import List, NamedTuple

import numpy as np

from . import _protocol as P


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
    initialised default process group, else 0 of 1."""
    if rank is None and "RANK" in os.environ:
        rank = int(os.environ["RANK"])
    if world_size is None and "WORLD_SIZE" in os.environ:
        world_size = int(os.environ["WORLD_SIZE"])
    if rank is None or world_size is None:
        dist = sys.modules.get("torch.distributed")
        if dist is not None and dist.is_available() and dist.is_initialized():
            rank = dist.get_rank() if rank is None else rank
            world_size = dist.get_world_size() if world_size is None else world_size
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
    PATH) once and keeps it for every epoch. Each iteration runs epoch
    `self.epoch` (set it with set_epoch, as with DistributedSampler;
    iterating again without set_epoch repeats the epoch's order and
    augmentations) and yields (images, labels): torch tensors when torch is
    installed (or output="torch"), numpy arrays with output="numpy".

    Lifetime: images and labels VIEW the shared-memory slot of their batch;
    no copy is made. The slot goes back to the server when the next batch
    is requested (or the iteration ends), after which the server may
    overwrite it: keep a batch beyond that by copying it (.clone(),
    .copy(), or .pin_memory()/.cuda(non_blocking=True), which copy).

    Ranks: rank and world_size default from the environment variables RANK
    and WORLD_SIZE (torchrun), or an initialised torch.distributed group;
    each rank reads a disjoint part of the data, all parts together are the
    whole, and every rank yields len(loader) batches of the same sizes, so
    every rank runs every step (no rank is left waiting in an all-reduce).
    With drop_last=False (the default) a rank with fewer samples than the
    largest repeats its epoch's first samples to make up the difference, as
    DistributedSampler(drop_last=False) does; Batch.repeats counts them
    (Batch.mask to leave them out of a metric). With drop_last=True every
    rank takes the whole batches of the smallest rank's samples, without
    repeats.

    Other arguments map to `faster serve` flags: transform ("train",
    "eval"), resolution, layout ("f32-chw": float32 normalised NCHW, or
    "u8-hwc": uint8 NHWC to normalise on the accelerator), workers (decode
    threads; 0 = all cores), seed, shuffle (None: shuffle unless transform
    is "eval"; True/False to choose), split (of a packed dataset), slots
    (batches in the shared ring for this process, the prefetch depth; the
    server decodes straight into the ring, whose file holds slots + 3 batches
    for that: memory is (slots + 3) x batch bytes).

    set_epoch(e) makes the next iteration epoch e exactly, whatever ran
    before: a loader started fresh at epoch e (a resumed job) yields what a
    long-running one yields at epoch e, on every kind of data.

    label_offset is added to every stored label: -1 for TensorFlow's
    ImageNet shards, whose image/class/label counts from 1.

    Damaged samples: on_error="stop" (default) raises ServerError at the
    first, naming file and offset; on_error="skip" skips them (the padding
    that keeps ranks in step makes up for them), fails only beyond max_bad (a
    count, or a percentage string like "0.1%"), and lists them in the file
    quarantine (JSON lines; quarantine.rankN with world_size above 1) when
    the loader closes, as `faster bench load --on-error skip` does.
    """

    def __init__(self, data, batch_size=256, transform="train", rank=None, world_size=None,
                 seed=0, epoch=0, workers=0, resolution=224, layout="f32-chw", binary=None,
                 drop_last=False, slots=4, split="train", output=None, shm_dir="/dev/shm",
                 shuffle=None, label_offset=0, on_error="stop", max_bad=None, quarantine=None):
        for name, v, least in (("batch_size", batch_size, 1), ("resolution", resolution, 1),
                               ("slots", slots, 1), ("workers", workers, 0)):
            if isinstance(v, bool) or not isinstance(v, int) or v < least:
                raise ValueError("faster: %s=%r: want an integer of at least %d" % (name, v, least))
        self.rank, self.world_size = _default_rank(rank, world_size)
        if output is None:
            output = "torch" if importlib.util.find_spec("torch") is not None else "numpy"
        if output not in ("torch", "numpy"):
            raise ValueError("faster: output %r: want 'torch' or 'numpy'" % (output,))
        self.output = output
        self.epoch = int(epoch)
        self.batch_size = int(batch_size)
        self.shm_dir = shm_dir
        self._proc = None
        self._sock = None
        self._mm = None
        self._slots = []
        self._active = None
        self._token = None
        self._closed = False
        self._err = None
        self._phase = "before it started"
        self.drop_last = bool(drop_last)
        self._buf = bytearray(64 << 10)
        args = [_find_binary(binary), "serve", os.fspath(data),
                "--batch", str(batch_size), "--transform", transform,
                "--resolution", str(resolution), "--layout", layout,
                "--workers", str(workers), "--num-shards", str(self.world_size),
                "--shard-index", str(self.rank), "--seed", str(seed), "--split", split,
                "--slots", str(slots), "--shm-dir", shm_dir,
                "--label-offset", str(int(label_offset))]
        if drop_last:
            args.append("--drop")
        if shuffle is not None:
            args.append("--shuffle" if shuffle else "--no-shuffle")
        if on_error not in ("stop", "skip"):
            raise ValueError("faster: on_error=%r: want 'stop' or 'skip'" % (on_error,))
        if on_error == "skip":
            args += ["--on-error", "skip"]
            if max_bad is not None:
                args += ["--max-bad", str(max_bad)]
            if quarantine is not None:
                args += ["--quarantine", os.fspath(quarantine)]
        elif max_bad is not None or quarantine is not None:
            raise ValueError("faster: max_bad= and quarantine= need on_error='skip'")
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        self._sock = ours
        self._err = tempfile.TemporaryFile()
        try:
            args[3:3] = ["--fd", str(theirs.fileno())]
            self._proc = subprocess.Popen(args, pass_fds=(theirs.fileno(),), stdin=subprocess.DEVNULL,
                                          stdout=subprocess.DEVNULL, stderr=self._err)
        finally:
            theirs.close()  # else the server's death would not reach us as EOF
        try:
            self._attach()
        except BaseException:
            self.close()
            raise

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
        msg = ""
        try:
            self._err.seek(0)
            msg = self._err.read()[-2000:].decode("utf-8", "replace").strip()
        except (OSError, ValueError):
            pass
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
        for i in range(h["slots"]):
            base = h["header_bytes"] + i * h["slot_bytes"]
            im = np.frombuffer(self._mm, dtype, count, base + h["images_offset"]).reshape((batch,) + shape)
            lb = np.frombuffer(self._mm, np.int64, batch, base + h["labels_offset"])
            if torch is not None:
                im, lb = torch.from_numpy(im), torch.from_numpy(lb)
            self._slots.append((im, lb))

    # --- iteration ---

    def set_epoch(self, epoch):
        """Sets the epoch the next iteration runs (shuffle and augmentation
        seeds), like DistributedSampler.set_epoch."""
        self.epoch = int(epoch)

    def __len__(self):
        """Batches per epoch: the same on every rank, as the server computes
        it from every rank's sample count (see Batch)."""
        steps = self.hello.get("steps", -1)
        if steps < 0:
            raise TypeError("faster: the epoch's length is unknown (shards without indexes or manifest)")
        return steps

    def __iter__(self):
        for b in self.batches():
            yield b.images, b.labels

    def batches(self):
        """Yields the epoch's Batch tuples (images, labels, keys, epoch,
        index, valid), with the lifetime described in the class docs."""
        if self._active is not None:
            self._active.close()  # one iteration at a time: end the last
        token = self._token = object()
        gen = self._run_epoch(self.epoch, token)
        self._active = gen
        return gen

    def _run_epoch(self, epoch, token):
        if self._closed:
            raise ServerError("faster: the loader is closed")
        self._send(P.EPOCH, struct.pack("<q", epoch))
        held = None
        done = False
        try:
            while True:
                if held is not None:
                    self._send(P.FREE, held.to_bytes(4, "little"))
                    held = None
                typ, payload = self._recv()
                if typ == P.END:
                    done = True
                    return
                if typ != P.READY:
                    raise ServerError("faster: protocol error: frame %r during an epoch" % typ)
                slot, e, index, valid, rows, repeats = P.READY_FIXED.unpack_from(payload)
                keys = bytes(payload[P.READY_FIXED.size:]).decode("utf-8", "surrogateescape").split("\0") if valid else []
                held = slot
                im, lb = self._slots[slot]
                yield Batch(im[:valid], lb[:valid], keys, e, index, valid, repeats)
        finally:
            mine = self._token is token
            if mine and not self._closed and self._sock is not None:
                try:
                    if held is not None:
                        self._send(P.FREE, held.to_bytes(4, "little"))
                    if not done:  # stopped early: cancel and drain to the end
                        self._send(P.CANCEL)
                        while True:
                            typ, payload = self._recv()
                            if typ == P.END:
                                break
                            if typ == P.READY:
                                self._send(P.FREE, payload[:4])
                except ServerError:
                    pass
            if mine:
                self._active = self._token = None

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
        self._closed = True
        if self._active is not None:
            gen, self._active, self._token = self._active, None, None
            gen.close()
        self._closed_sock()
        if self._proc is not None and self._proc.poll() is None:
            try:
                self._proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()
        self._slots = []
        if self._mm is not None:
            try:
                self._mm.close()
            except BufferError:
                pass  # views still exported: the GC unmaps it later
            self._mm = None
        if self._err is not None:
            self._err.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass
