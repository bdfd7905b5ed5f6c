#!/usr/bin/python3
"""The seed's resize_imagenet.py, as the Python/OpenCV peer of
`faster resize`: one process walks SRC, and for every file does what the
seed does for every file of train/<class>/: cv2.imread; if the shorter edge
is at most N, copy the file as it is; else cv2.resize with INTER_AREA to
the seed's size (int((long/short) * N) for the longer edge) and cv2.imwrite
under the same name (JPEG quality 90, as `faster resize` writes by
default; cv2's own default would be 95). Unlike the seed it walks the whole
tree (all splits), as `faster resize` does, and skips files cv2 cannot
read instead of crashing. It prints images/s as JSON.

--threads sets cv2.setNumThreads (default 1: the benchmark compares one
core each; the seed leaves OpenCV's default, which uses every core for
cv2.resize).

Usage: peer_resize_opencv.py --src SRC --dst DST --max-size N [--threads T]
"""
import argparse
import json
import os
import shutil
import time

import cv2


def main():
    ap = argparse.ArgumentParser(description="ImageNet resizing (the seed's script, whole tree)")
    ap.add_argument("--src", required=True)
    ap.add_argument("--dst", required=True)
    ap.add_argument("--max-size", type=int, default=256)
    ap.add_argument("--quality", type=int, default=90)
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args()
    cv2.setNumThreads(args.threads)
    n = resized = copied = failed = 0
    start, cpu0 = time.perf_counter(), time.process_time()
    for root, dirs, files in os.walk(args.src):
        dirs.sort()
        out = os.path.join(args.dst, os.path.relpath(root, args.src))
        os.makedirs(out, exist_ok=True)
        for f in sorted(files):
            src_file, dst_file = os.path.join(root, f), os.path.join(out, f)
            image = cv2.imread(src_file)
            n += 1
            if image is None:
                failed += 1
                continue
            if min(image.shape[0], image.shape[1]) <= args.max_size:
                shutil.copyfile(src_file, dst_file)
                copied += 1
            else:
                if image.shape[0] < image.shape[1]:
                    size = (int((image.shape[1] / image.shape[0]) * args.max_size), args.max_size)
                else:
                    size = (args.max_size, int((image.shape[0] / image.shape[1]) * args.max_size))
                image = cv2.resize(image, size, interpolation=cv2.INTER_AREA)
                cv2.imwrite(dst_file, image, [cv2.IMWRITE_JPEG_QUALITY, args.quality])
                resized += 1
    secs, cpu = time.perf_counter() - start, time.process_time() - cpu0
    print(json.dumps({"images": n, "resized": resized, "copied": copied, "failed": failed,
                      "seconds": secs, "images_per_sec": (resized + copied) / secs,
                      "cpu_seconds": cpu}))


if __name__ == "__main__":
    main()
