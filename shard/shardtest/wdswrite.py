#!/usr/bin/python3
"""Writes files of a directory into a tar with Python's tarfile, as
webdataset's TarWriter does (a tarfile in the given format; gzip-compressed
through Python's gzip when the output name ends in .gz or .tgz), each
member a regular file named as given, in the order given.

Usage: wdswrite.py FORMAT(pax|gnu|ustar) DIR OUT NAME...
"""
import io
import os
import sys
import tarfile

FORMATS = {"pax": tarfile.PAX_FORMAT, "gnu": tarfile.GNU_FORMAT, "ustar": tarfile.USTAR_FORMAT}


def main():
    fmt, root, out, names = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
    mode = "w:gz" if out.endswith((".gz", ".tgz")) else "w"
    with tarfile.open(out, mode, format=FORMATS[fmt]) as tf:
        for name in names:
            with open(os.path.join(root, name), "rb") as f:
                data = f.read()
            ti = tarfile.TarInfo(name)
            ti.size = len(data)
            ti.mode = 0o444
            ti.uname, ti.gname = "bigdata", "bigdata"
            ti.mtime = 1700000000
            tf.addfile(ti, io.BytesIO(data))


main()
