#!/usr/bin/python3
"""Writes TFRecord shards as TensorFlow's build_imagenet_data.py does, with
no TensorFlow and no code of this project: the framing (length, masked
CRC-32C of the length, data, masked CRC-32C of the data), the CRC-32C and the
tf.train.Example protobuf bytes are written here from their specifications.

    tfimagenet.py OUT --split train --shards 4 --per-shard 5 --classes 3
                  [--ext ""] [--index none|stem|full] [--label-base 1]

Shard i of n of a split is OUT/<split>-%05d-of-%05d<ext> (the script's names
have no extension). Record k of all shards has label
label_base + k % classes (build_imagenet_data.py counts from 1), synset
n%08d of the class, filename n%08d_<k>.JPEG, and a small PNG as its
image/encoded (a w x h image of one colour that depends on k). --index writes
DALI tfrecord2idx indexes ("offset size" per record): "stem" beside X as X.idx
(X without its extension), "full" as X<ext>.idx.
"""
import argparse
import os
import struct
import zlib

# CRC-32C (Castagnoli), reflected polynomial 0x82F63B78.
_TABLE = []
for _i in range(256):
    _c = _i
    for _ in range(8):
        _c = (_c >> 1) ^ 0x82F63B78 if _c & 1 else _c >> 1
    _TABLE.append(_c)


def crc32c(b):
    c = 0xFFFFFFFF
    for x in b:
        c = _TABLE[(c ^ x) & 0xFF] ^ (c >> 8)
    return c ^ 0xFFFFFFFF


def masked(b):
    c = crc32c(b)
    return (((c >> 15) | (c << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def frame(data):
    n = struct.pack("<Q", len(data))
    return n + struct.pack("<I", masked(n)) + data + struct.pack("<I", masked(data))


def varint(n):
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def field(num, wire, payload):
    tag = varint(num << 3 | wire)
    if wire == 2:
        return tag + varint(len(payload)) + payload
    return tag + payload


def bytes_feature(v):  # Feature{bytes_list(1): BytesList{value(1)}}
    return field(1, 2, field(1, 2, v))


def int64_feature(v):  # Feature{int64_list(3): Int64List{value(1), packed}}
    return field(3, 2, field(1, 2, varint(v & 0xFFFFFFFFFFFFFFFF)))


def example(feats):  # Example{features(1): Features{feature(1): map<string, Feature>}}
    entries = b"".join(field(1, 2, field(1, 2, k.encode()) + field(2, 2, v)) for k, v in feats)
    return field(1, 2, entries)


def png(w, h, rgb):
    raw = b"".join(b"\x00" + bytes(rgb) * w for _ in range(h))

    def chunk(t, d):
        return struct.pack(">I", len(d)) + t + d + struct.pack(">I", zlib.crc32(t + d) & 0xFFFFFFFF)

    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--split", default="train")
    ap.add_argument("--shards", type=int, default=2)
    ap.add_argument("--per-shard", type=int, default=4)
    ap.add_argument("--classes", type=int, default=3)
    ap.add_argument("--label-base", type=int, default=1)
    ap.add_argument("--ext", default="")
    ap.add_argument("--index", default="none", choices=["none", "stem", "full"])
    ap.add_argument("--size", type=int, default=8)
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    k = 0
    for s in range(a.shards):
        name = "%s-%05d-of-%05d" % (a.split, s, a.shards)
        offsets = []
        with open(os.path.join(a.out, name + a.ext), "wb") as f:
            for _ in range(a.per_shard):
                c = k % a.classes
                synset = "n%08d" % c
                feats = [
                    ("image/height", int64_feature(a.size)),
                    ("image/width", int64_feature(a.size)),
                    ("image/colorspace", bytes_feature(b"RGB")),
                    ("image/channels", int64_feature(3)),
                    ("image/class/label", int64_feature(a.label_base + c)),
                    ("image/class/synset", bytes_feature(synset.encode())),
                    ("image/class/text", bytes_feature(("class %d" % c).encode())),
                    ("image/format", bytes_feature(b"PNG")),
                    ("image/filename", bytes_feature(("%s_%d.JPEG" % (synset, k)).encode())),
                    ("image/encoded", bytes_feature(png(a.size, a.size, ((k * 37) % 256, (k * 91) % 256, 128)))),
                ]
                rec = frame(example(feats))
                offsets.append((f.tell(), len(rec)))
                f.write(rec)
                k += 1
        if a.index != "none":
            idx = name + ".idx" if a.index == "stem" else name + a.ext + ".idx"
            with open(os.path.join(a.out, idx), "w") as f:
                for off, size in offsets:
                    f.write("%d %d\n" % (off, size))


if __name__ == "__main__":
    main()
