# Writes the image files named on the command line as two Caffe LMDBs, as
# Caffe's convert_imageset does with and without --encoded: Datums of the
# files' bytes (encoded: true), and Datums of their pixels, channels x
# height x width uint8 planes in B, G, R order (1 channel for a gray
# file). python3-lmdb and PIL; the Datum protobuf is written by hand, so
# neither caffe nor our writer is involved. Labels are the files' order.
# usage: write_datums.py ENCODED_LMDB RAW_LMDB FILE...
import io, sys
import lmdb
from PIL import Image

enc_path, raw_path, files = sys.argv[1], sys.argv[2], sys.argv[3:]

def varint(n):
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        out.append(b | 0x80 if n else b)
        if not n:
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

for path, raw in ((enc_path, False), (raw_path, True)):
    env = lmdb.open(path, map_size=1 << 28)
    with env.begin(write=True) as txn:
        for i, f in enumerate(files):
            data = open(f, "rb").read()
            if raw:
                im = Image.open(io.BytesIO(data))
                w, h = im.size
                if im.mode == "L":
                    v = datum(1, h, w, im.tobytes(), i, False)
                else:
                    r, g, b = im.convert("RGB").split()
                    v = datum(3, h, w, b.tobytes() + g.tobytes() + r.tobytes(), i, False)
            else:
                v = datum(0, 0, 0, data, i, True)
            txn.put(("%08d_%s" % (i, f.rsplit("/", 1)[-1])).encode(), v)
    env.close()
