# Writes the same ImageFolder tree as a WebDataset tar (tarfile) and as
# Caffe LMDBs (python3-lmdb) of encoded and of raw Datums, with the Datum
# protobuf written by hand (no caffe needed). Used by cmd_formats_test.go.
# usage: write_formats.py ROOT OUT_TAR LMDB_ENCODED LMDB_RAW
import io, os, sys, tarfile

root, out_tar, lmdb_enc, lmdb_raw = sys.argv[1:5]
classes = sorted(d for d in os.listdir(root) if os.path.isdir(os.path.join(root, d)))
items = []
for label, c in enumerate(classes):
    for dirpath, dirs, files in sorted(os.walk(os.path.join(root, c))):
        for f in sorted(files):
            rel = os.path.relpath(os.path.join(dirpath, f), root)
            items.append((rel, label))

def varint(n):
    out = bytearray()
    n &= (1 << 64) - 1
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)

def datum(channels, height, width, data, label, encoded):
    b = bytearray()
    if channels: b += b"\x08" + varint(channels)
    if height: b += b"\x10" + varint(height)
    if width: b += b"\x18" + varint(width)
    b += b"\x22" + varint(len(data)) + data
    b += b"\x28" + varint(label)
    if encoded: b += b"\x38\x01"
    return bytes(b)

with tarfile.open(out_tar, "w") as tf:
    for rel, label in items:
        data = open(os.path.join(root, rel), "rb").read()
        key = os.path.splitext(rel)[0]
        for name, payload in ((rel, data), (key + ".cls", str(label).encode())):
            ti = tarfile.TarInfo(name)
            ti.size = len(payload)
            tf.addfile(ti, io.BytesIO(payload))

import lmdb
from PIL import Image

for path, raw in ((lmdb_enc, False), (lmdb_raw, True)):
    env = lmdb.open(path, map_size=1 << 30)
    with env.begin(write=True) as txn:
        for i, (rel, label) in enumerate(items):
            data = open(os.path.join(root, rel), "rb").read()
            if raw:
                im = Image.open(io.BytesIO(data)).convert("RGB")
                w, h = im.size
                r, g, b = im.split()
                v = datum(3, h, w, b.tobytes() + g.tobytes() + r.tobytes(), label, False)
            else:
                v = datum(0, 0, 0, data, label, True)
            txn.put(("%08d_%s" % (i, rel)).encode(), v)
    env.close()
