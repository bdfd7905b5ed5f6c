"""faster.Loader(device=...): batches as torch CUDA tensors without a host
copy. The decision and the protocol are in docs/serve.md ("GPU batches");
what is here runs without a GPU: the argument's check, the refusal where
torch.cuda is unavailable, and the __cuda_array_interface__ view that will
wrap each slot of the server's device memory once it is opened by CUDA IPC
(the opening and the server's side wait for a GPU run)."""
import re

_FORM = re.compile(r"^cuda(?::(\d+))?$")


def parse(device):
    """None for the CPU ("cpu" or None), else the GPU's index: "cuda",
    "cuda:N", a torch.device of type cuda, or an int. ValueError names the
    argument otherwise."""
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
            return device.index or 0
        raise ValueError("faster: device=%r: want a cpu or cuda device" % (device,))
    if not isinstance(device, str):
        raise ValueError("faster: device=%r: want 'cpu', 'cuda' or 'cuda:N'" % (device,))
    if device == "cpu":
        return None
    m = _FORM.match(device)
    if not m:
        raise ValueError("faster: device=%r: want 'cpu', 'cuda' or 'cuda:N'" % (device,))
    return int(m.group(1) or 0)


def require(ordinal, torch_module=None):
    """Check that torch can take batches on GPU ordinal: RuntimeError
    saying what is missing (torch, a CUDA build, a device, that GPU), then
    NotImplementedError: the hand-off itself waits for the GPU (the
    server's device ring and the IPC open are not yet run)."""
    torch = torch_module
    if torch is None:
        try:
            import torch  # noqa: F811
        except ImportError:
            raise RuntimeError("faster.Loader(device='cuda:%d'): needs torch with CUDA, and torch is not installed; "
                               "leave device= out for CPU tensors" % ordinal) from None
    cuda = getattr(torch, "cuda", None)
    if cuda is None or not cuda.is_available():
        raise RuntimeError("faster.Loader(device='cuda:%d'): torch.cuda is not available (no GPU, or a CPU-only "
                           "torch build); leave device= out for CPU tensors, or pin_memory=True to copy them "
                           "to a GPU" % ordinal)
    n = cuda.device_count()
    if ordinal >= n:
        raise RuntimeError("faster.Loader(device='cuda:%d'): torch sees %d GPU(s) (cuda:0 to cuda:%d)"
                           % (ordinal, n, n - 1))
    raise NotImplementedError("faster.Loader(device='cuda:%d'): the GPU hand-off (the server's device ring by "
                              "CUDA IPC, docs/serve.md \"GPU batches\") is prepared, not yet run on a GPU; "
                              "use pin_memory=True and .cuda(non_blocking=True) meanwhile" % ordinal)


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
