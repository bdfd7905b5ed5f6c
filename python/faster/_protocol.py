"""Wire and file format of `faster serve`; see the Go package serve's
documentation (serve/doc.go) for the specification. These constants repeat
serve/format.go and must not change without a new VERSION."""
import struct

MAGIC = b"FSTSERVE"
VERSION = 5
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
