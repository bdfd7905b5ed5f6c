"""Wire and file format of `faster serve`; see the Go package serve's
documentation (serve/doc.go) for the specification. These constants repeat
serve/format.go and must not change without a new VERSION."""
import struct

MAGIC = b"FSTSERVE"
VERSION = 6
HEADER_BYTES = 4096
MAX_FRAME = 16 << 20
SHM_PREFIX = "faster-serve-"

# frame types
HELLO, READY, END, ERROR = b"H", b"R", b"D", b"X"
REFUSED = b"N"  # the epoch request cannot run (its epoch or state); the session goes on
ATTACH, EPOCH, FREE, CANCEL = b"A", b"E", b"F", b"C"
SEED = b"S"  # uint64: the seed of the epochs from the next EPOCH on
ORDER = b"O"  # int64 dataset positions appended to the next epoch's order (--sampler indices)

FRAME_HEAD = struct.Struct("<Ic")  # length (of type + payload), type
READY_FIXED = struct.Struct("<IqqIIIq")  # slot, epoch, index, valid, rows, repeats, consumed
END_FIXED = struct.Struct("<qqqB")  # epoch, batches, images, cancelled; then JSON statistics
FILE_HEADER = struct.Struct("<8sIIQQIII4IIQQ")
SLOT_HEADER = struct.Struct("<qqqqq")  # epoch, index, valid, rows, repeats

DTYPES = {"float32": 1, "uint8": 2}

# device="cuda": batches in the server's GPU memory, handed over by CUDA IPC
# (docs/serve.md, "GPU batches"; VERSION 6, serve/device.go). When the hello
# has "device", a DEVICE frame follows it: the GPU and, per slot, the handle
# of the batch-decode stage's buffer of that index, of the hello's
# "handles" kind: HANDLE_CUDA, a cudaIpcMemHandle_t (CUDA's
# CUDA_IPC_HANDLE_SIZE: 64 bytes), or HANDLE_SHM, a file name under /dev/shm
# (the host stand-in the tests serve); READY and FREE name slots as today,
# the host ring's slot holding only its header and labels.
HANDLE_CUDA = "cuda-ipc"
HANDLE_SHM = "shm"
DEVICE = b"G"
DEVICE_FIXED = struct.Struct("<IIQ")  # ordinal, slots, bytes per slot; then slots x IPC_HANDLE_BYTES
IPC_HANDLE_BYTES = 64  # sizeof(cudaIpcMemHandle_t): CUDA_IPC_HANDLE_SIZE in driver_types.h
MAX_DEVICE_SLOTS = 1024


def device_frame(ordinal, slot_bytes, handles):
    """The DEVICE frame's payload (what the server sends)."""
    if not 0 < len(handles) <= MAX_DEVICE_SLOTS:
        raise ValueError("device frame: %d slots (1 to %d)" % (len(handles), MAX_DEVICE_SLOTS))
    for i, h in enumerate(handles):
        if len(h) != IPC_HANDLE_BYTES:
            raise ValueError("device frame: slot %d's IPC handle is %d bytes, want %d" % (i, len(h), IPC_HANDLE_BYTES))
    return DEVICE_FIXED.pack(ordinal, len(handles), slot_bytes) + b"".join(bytes(h) for h in handles)


def parse_device(payload):
    """(ordinal, slot_bytes, [handle, ...]) of a DEVICE frame, checked."""
    if len(payload) < DEVICE_FIXED.size:
        raise ValueError("device frame of %d bytes: shorter than its %d-byte head" % (len(payload), DEVICE_FIXED.size))
    ordinal, n, slot_bytes = DEVICE_FIXED.unpack_from(payload)
    if not 0 < n <= MAX_DEVICE_SLOTS or slot_bytes == 0:
        raise ValueError("device frame: %d slots of %d bytes" % (n, slot_bytes))
    want = DEVICE_FIXED.size + n * IPC_HANDLE_BYTES
    if len(payload) != want:
        raise ValueError("device frame of %d bytes: %d slots need %d" % (len(payload), n, want))
    body = payload[DEVICE_FIXED.size:]
    return ordinal, slot_bytes, [bytes(body[i * IPC_HANDLE_BYTES:(i + 1) * IPC_HANDLE_BYTES]) for i in range(n)]


def frame(typ, payload=b""):
    return FRAME_HEAD.pack(len(payload) + 1, typ) + payload


# Bounds of a loader.State's fields (loader/state.go: MaxEpoch, MaxSegments,
# MaxWorld, maxSteps, maxBatch, maxFingerprint), checked before a state is
# sent; the server checks them again.
MAX_EPOCH = 1 << 31
MAX_SEGMENTS = 1024
MAX_WORLD = 1 << 20
MAX_STEPS = 1 << 40
MAX_BATCH = 1 << 20
MAX_FINGERPRINT = 64
