#!/usr/bin/python3
"""The samples of a WebDataset tar (plain or gzip-compressed) as Python's
tarfile reads it and webdataset's rules group it: regular members only; the
key is the name up to the first dot of its base name (a base name starting
with a dot is no sample's); the extension after it, lower-cased
(webdataset's group_by_keys(lcase=True)); consecutive members with one key
are one sample. Prints one JSON object per sample: key, exts, label (the
.cls member's integer, else the .json member's "label", else null), image
(sha256 of the first member whose last extension is an image's, or null),
offset (tarfile's offset of the sample's first member header) and data
(each member's data offset and size).

Usage: wdsref.py TAR
"""
import hashlib
import json
import sys
import tarfile

IMAGE = {"jpg", "jpeg", "png", "ppm", "bmp", "pgm", "tif", "tiff", "webp"}


def split(name):
    slash = name.rfind("/") + 1
    dot = name.find(".", slash)
    if dot < 0:
        return name, ""
    return name[:dot], name[dot + 1:].lower()


def main():
    samples = []
    with tarfile.open(sys.argv[1], "r:*") as tf:
        for m in tf:
            if not m.isreg():
                continue
            key, ext = split(m.name)
            if key == "" or key.endswith("/"):
                continue
            data = tf.extractfile(m).read()
            if not samples or samples[-1]["key"] != key:
                samples.append({"key": key, "exts": [], "data": [], "label": None, "image": None, "offset": m.offset})
            s = samples[-1]
            s["exts"].append(ext)
            s["data"].append([m.offset_data, m.size])
            last = ext.rsplit(".", 1)[-1]
            if last in IMAGE and s["image"] is None:
                s["image"] = hashlib.sha256(data).hexdigest()
            elif last == "cls" and s["label"] is None:
                s["label"] = int(data.decode().strip())
            elif last == "json" and s["label"] is None:
                s["label"] = json.loads(data).get("label")
    for s in samples:
        print(json.dumps(s))


main()
