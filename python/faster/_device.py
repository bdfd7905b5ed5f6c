"""faster.Loader(device=...): batches as torch CUDA tensors without a host
copy. The decision and the protocol are in docs/serve.md ("GPU batches").
Here: the argument's check, the refusal where torch.cuda is unavailable,
the __cuda_array_interface__ view of a slot, and DeviceRing: the server's
batch buffers, opened once per session from the DEVICE frame's handles
(cudaIpcOpenMemHandle through ctypes on the libcudart torch loaded; or, for
the host stand-in the tests serve, shared-memory files), each slot owned
behind a fence until the user's stream is done with it. What runs without a
GPU: all but the CUDA opener and the CUDA events (prepared, for a GPU run)."""
import contextlib
import ctypes
import glob
import mmap
import os
import re

from . import _protocol as P

_FORM = re.compile(r"^cuda(?::(\d+))?$")


# CURRENT is parse's answer for a GPU without an index ("cuda",
# torch.device("cuda")): torch's current device, as torch reads them
# (resolve; under torchrun, the rank's after torch.cuda.set_device).
CURRENT = -1


def parse(device):
    """None for the CPU ("cpu" or None), else the GPU's index: "cuda:N", a
    torch.device of type cuda with an index, or an int; CURRENT for "cuda"
    or a torch.device without one. ValueError names the argument
    otherwise."""
    if device is None:
        return None
    if isinstance(device, bool):
        raise ValueError("faster: device=%r: want 'cpu', 'cuda' or 'cuda:N'" % (device,))
    if isinstance(device, int):
        if device < 0:
            raise ValueError("faster: device=%r: want a GPU index >= 0" % (device,))
        return device
    typ = getattr(device, "type", None)  # a torch.device
    if typ is not None and not isinstance(device, str):
        if typ == "cpu":
            return None
        if typ == "cuda":
            return CURRENT if device.index is None else device.index
        raise ValueError("faster: device=%r: want a cpu or cuda device" % (device,))
    if not isinstance(device, str):
        raise ValueError("faster: device=%r: want 'cpu', 'cuda' or 'cuda:N'" % (device,))
    if device == "cpu":
        return None
    m = _FORM.match(device)
    if not m:
        raise ValueError("faster: device=%r: want 'cpu', 'cuda' or 'cuda:N'" % (device,))
    return CURRENT if m.group(1) is None else int(m.group(1))


def name(ordinal):
    """The device as the user gave it, for messages."""
    return "cuda" if ordinal == CURRENT else "cuda:%d" % ordinal


def resolve(ordinal, torch):
    """The GPU's index: ordinal, or torch's current device for CURRENT."""
    if ordinal == CURRENT:
        return int(torch.cuda.current_device())
    return ordinal


def require(ordinal, torch_module=None):
    """Check that torch can take batches on GPU ordinal: RuntimeError
    saying what is missing (torch, a CUDA build, a device, that GPU);
    returns the torch module."""
    torch = torch_module
    if torch is None:
        try:
            import torch  # noqa: F811
        except ImportError:
            raise RuntimeError("faster.Loader(device='%s'): needs torch with CUDA, and torch is not installed; "
                               "leave device= out for CPU tensors" % name(ordinal)) from None
    cuda = getattr(torch, "cuda", None)
    if cuda is None or not cuda.is_available():
        raise RuntimeError("faster.Loader(device='%s'): torch.cuda is not available (no GPU, or a CPU-only "
                           "torch build); leave device= out for CPU tensors, or pin_memory=True to copy them "
                           "to a GPU" % name(ordinal))
    n = cuda.device_count()
    if ordinal != CURRENT and ordinal >= n:
        raise RuntimeError("faster.Loader(device='cuda:%d'): torch sees %d GPU(s) (cuda:0 to cuda:%d)"
                           % (ordinal, n, n - 1))
    return torch


class CudaArray:
    """A view of device memory as __cuda_array_interface__ (version 3)
    describes it, for torch.as_tensor(..., device='cuda') to wrap without
    a copy: ptr is a device address in this process (an opened IPC
    handle's, plus the rows' offset), shape the batch's (N, C, H, W) or
    (N, H, W, C), dtype "float32" or "uint8"."""

    _TYPESTR = {"float32": "<f4", "uint8": "|u1"}

    def __init__(self, ptr, shape, dtype):
        if dtype not in self._TYPESTR:
            raise ValueError("CudaArray: dtype %r: want float32 or uint8" % (dtype,))
        if ptr <= 0 or any(int(d) < 0 for d in shape):
            raise ValueError("CudaArray: pointer %#x, shape %r" % (ptr, shape))
        self.ptr, self.shape, self.dtype = int(ptr), tuple(int(d) for d in shape), dtype

    @property
    def __cuda_array_interface__(self):
        # stream None: the producer synchronised before READY (the server
        # waits for its decode before announcing a slot).
        return {"shape": self.shape, "typestr": self._TYPESTR[self.dtype], "data": (self.ptr, False),
                "version": 3, "strides": None, "stream": None}


# cudaIpcMemLazyEnablePeerAccess: CUDA's driver_types.h,
# "#define cudaIpcMemLazyEnablePeerAccess 0x01".
IPC_LAZY_ENABLE_PEER_ACCESS = 0x01
CUDART_SONAMES = ("libcudart.so.13", "libcudart.so.12")


class _IpcHandle(ctypes.Structure):
    # cudaIpcMemHandle_t (driver_types.h): struct { char reserved[CUDA_IPC_HANDLE_SIZE]; }, passed by value
    _fields_ = [("reserved", ctypes.c_char * P.IPC_HANDLE_BYTES)]


def _loaded_cudart():
    """The CUDA runtimes already in this process (the copy torch loaded,
    wherever it came from), as paths or sonames for ctypes.CDLL: each
    soname dlopen finds loaded (RTLD_NOLOAD opens nothing new), then each
    libcudart mapped in /proc/self/maps (a wheel's copy may carry a
    renamed soname)."""
    found = []
    for so in CUDART_SONAMES:
        try:
            ctypes.CDLL(so, mode=os.RTLD_NOLOAD | os.RTLD_NOW)
        except OSError:
            continue
        found.append(so)
    try:
        with open("/proc/self/maps") as f:
            for line in f:
                fields = line.split(None, 5)  # address perms offset dev inode path
                path = fields[5].strip() if len(fields) == 6 else ""
                if os.path.basename(path).startswith("libcudart") and ".so" in path and path not in found:
                    found.append(path)
    except OSError:
        pass
    return found


def cudart(torch=None):
    """The CUDA runtime torch loaded, by ctypes. First the copy already in
    this process (_loaded_cudart): a second copy would have its own
    current device and state, unlike torch's. Else torch's own copy (its
    lib/ or the nvidia wheels beside it) when found, else by soname
    (libcudart.so.13, then .12). RuntimeError names what was tried."""
    tried = []
    cands = _loaded_cudart()
    if torch is not None:
        base = os.path.dirname(os.path.abspath(torch.__file__))
        site = os.path.dirname(base)
        for d in (os.path.join(base, "lib"), os.path.join(site, "nvidia", "cu13", "lib"),
                  os.path.join(site, "nvidia", "cuda_runtime", "lib")):
            for so in CUDART_SONAMES:
                cands += sorted(glob.glob(os.path.join(d, so + "*")))
    cands += list(CUDART_SONAMES)
    for c in cands:
        try:
            lib = ctypes.CDLL(c)
        except OSError as e:
            tried.append("%s (%s)" % (c, e))
            continue
        lib.cudaGetDevice.argtypes = [ctypes.POINTER(ctypes.c_int)]
        lib.cudaSetDevice.argtypes = [ctypes.c_int]
        lib.cudaIpcOpenMemHandle.argtypes = [ctypes.POINTER(ctypes.c_void_p), _IpcHandle, ctypes.c_uint]
        lib.cudaIpcCloseMemHandle.argtypes = [ctypes.c_void_p]
        for f in (lib.cudaGetDevice, lib.cudaSetDevice, lib.cudaIpcOpenMemHandle, lib.cudaIpcCloseMemHandle):
            f.restype = ctypes.c_int
        try:
            lib.cudaGetErrorString.argtypes = [ctypes.c_int]
            lib.cudaGetErrorString.restype = ctypes.c_char_p
        except AttributeError:  # error_text gives the number alone
            pass
        return lib
    raise RuntimeError("faster: no CUDA runtime to open the server's batch buffers: tried " + ", ".join(tried))


def error_text(lib, r):
    """CUDA error r as the runtime names it: "CUDA error N (its words)"."""
    try:
        words = lib.cudaGetErrorString(r)
    except Exception:  # a stand-in runtime without it
        words = None
    if isinstance(words, bytes):
        return "CUDA error %d (%s)" % (r, words.decode("utf-8", "replace"))
    return "CUDA error %d" % r


def torch_lib_dirs(torch):
    """The CUDA libraries' folders beside torch (its lib/ and the nvidia
    wheels' lib/), those that exist."""
    base = os.path.dirname(os.path.abspath(torch.__file__))
    dirs = [os.path.join(base, "lib")] + sorted(glob.glob(os.path.join(os.path.dirname(base), "nvidia", "*", "lib")))
    return [d for d in dirs if os.path.isdir(d)]


class _CudaSlots:
    """The server's device buffers opened by CUDA IPC (prepared: runs on a
    GPU only). Each handle is opened once (cudaIpcOpenMemHandle with
    cudaIpcMemLazyEnablePeerAccess) and closed at close(), each time with
    the server's GPU current on the calling thread (the user's) and the
    device that was current before made current again after (_on_device):
    torch's current device is the runtime's, and the user's code must not
    find it changed."""

    def __init__(self, ordinal, handles, torch):
        self._lib = cudart(torch)
        self._torch = torch
        self._ordinal = ordinal
        self.device = torch.device("cuda", ordinal)
        self.ptrs = []
        with self._on_device():
            try:
                for i, h in enumerate(handles):
                    p = ctypes.c_void_p()
                    r = self._lib.cudaIpcOpenMemHandle(ctypes.byref(p), _IpcHandle.from_buffer_copy(h),
                                                       IPC_LAZY_ENABLE_PEER_ACCESS)
                    if r != 0 or not p.value:
                        raise RuntimeError("faster: cudaIpcOpenMemHandle of the server's slot %d on cuda:%d: %s "
                                           "(the server and this process must use the same GPU)"
                                           % (i, ordinal, error_text(self._lib, r)))
                    self.ptrs.append(p.value)
            except BaseException:
                self._close()
                raise

    @contextlib.contextmanager
    def _on_device(self):
        """The server's GPU current inside, the one current before after
        (cudaGetDevice, cudaSetDevice)."""
        prev = ctypes.c_int(-1)
        r = self._lib.cudaGetDevice(ctypes.byref(prev))
        if r != 0:
            raise RuntimeError("faster: cudaGetDevice: %s" % error_text(self._lib, r))
        r = self._lib.cudaSetDevice(self._ordinal)
        if r != 0:
            raise RuntimeError("faster: cudaSetDevice(%d): %s" % (self._ordinal, error_text(self._lib, r)))
        try:
            yield
        finally:
            r = self._lib.cudaSetDevice(prev.value)
        if r != 0:
            raise RuntimeError("faster: cudaSetDevice(%d), back to the device current before: %s"
                               % (prev.value, error_text(self._lib, r)))

    def view(self, i, shape, dtype):
        return self._torch.as_tensor(CudaArray(self.ptrs[i], shape, dtype), device=self.device)

    def fence(self):
        e = self._torch.cuda.Event()
        e.record(self._torch.cuda.current_stream(self.device))  # after the user's work on its current stream
        return e

    @staticmethod
    def passed(fence):
        return fence.query()

    @staticmethod
    def wait(fence):
        fence.synchronize()

    def close(self):
        if not self.ptrs:
            return
        try:
            with self._on_device():
                self._close()
        finally:
            self._close()  # where the device could not be made current: closed as it is

    def _close(self):
        ptrs, self.ptrs = self.ptrs, []
        for p in ptrs:
            self._lib.cudaIpcCloseMemHandle(ctypes.c_void_p(p))


class _ShmSlots:
    """The host stand-in's buffers: shared-memory files named by the
    handles, mapped read-only; nothing to fence (the CPU reads them before
    it asks for the next batch)."""

    def __init__(self, handles, slot_bytes, shm_dir="/dev/shm", torch=None):
        import numpy as np
        self._np, self._torch = np, torch
        self.maps = []
        try:
            for i, h in enumerate(handles):
                name = bytes(h).rstrip(b"\0").decode()
                if not name or "/" in name or name.startswith("."):
                    raise ValueError("faster: device frame: slot %d names %r, not a file under %s" % (i, name, shm_dir))
                fd = os.open(os.path.join(shm_dir, name), os.O_RDONLY)
                try:
                    self.maps.append(mmap.mmap(fd, slot_bytes, mmap.MAP_SHARED, mmap.PROT_READ))
                finally:
                    os.close(fd)
        except BaseException:
            self.close()
            raise

    def view(self, i, shape, dtype):
        n = 1
        for d in shape:
            n *= int(d)
        a = self._np.frombuffer(self.maps[i], self._np.dtype(dtype), n).reshape(shape)
        return self._torch.from_numpy(a) if self._torch is not None else a

    @staticmethod
    def fence():
        return None

    @staticmethod
    def passed(fence):
        return True

    @staticmethod
    def wait(fence):
        pass

    def close(self):
        maps, self.maps = self.maps, []
        for m in maps:
            try:
                m.close()
            except BufferError:
                pass  # views still exported: the GC unmaps it later


class DeviceRing:
    """The server's batch buffers as the DEVICE frame hands them over: one
    view per slot (the whole batch, rows first), made once; fence, passed
    and wait say when the user's work on a slot has finished (Loader's
    _hand_back owns each slot behind its fence, as a pinned ring does)."""

    def __init__(self, hello, payload, torch=None, shm_dir="/dev/shm", slots=None):
        ordinal, slot_bytes, handles = P.parse_device(payload)
        if len(handles) != hello["slots"]:
            raise ValueError("device frame: %d slots, the hello %d" % (len(handles), hello["slots"]))
        rows = hello["batch"] * hello["row_bytes"]
        if slot_bytes < rows:
            raise ValueError("device frame: slots of %d bytes hold less than a batch (%d)" % (slot_bytes, rows))
        kind = hello.get("handles")
        self.kind, self.ordinal, self.slot_bytes = kind, ordinal, slot_bytes
        if slots is not None:
            self._slots = slots  # tests: stand-in slots with their own fences
        elif kind == P.HANDLE_CUDA:
            if torch is None:
                raise RuntimeError("faster: the server sent CUDA IPC handles, and torch is not loaded")
            self._slots = _CudaSlots(ordinal, handles, torch)
        elif kind == P.HANDLE_SHM:
            self._slots = _ShmSlots(handles, slot_bytes, shm_dir, torch)
        else:
            raise ValueError("device frame: handles of kind %r (want %r or %r)" % (kind, P.HANDLE_CUDA, P.HANDLE_SHM))
        shape = (hello["batch"],) + tuple(hello["shape"])
        try:
            self.images = [self._slots.view(i, shape, hello["dtype"]) for i in range(len(handles))]
        except BaseException:
            self._slots.close()
            raise
        self.device = getattr(self._slots, "device", None)  # a torch.device for CUDA slots

    def fence(self):
        return self._slots.fence()

    def passed(self, fence):
        return self._slots.passed(fence)

    def wait(self, fence):
        self._slots.wait(fence)

    def close(self):
        self.images = []
        self._slots.close()
