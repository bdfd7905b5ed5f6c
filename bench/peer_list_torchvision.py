#!/usr/bin/python3
"""The torchvision side of bench/run_scale.sh's listing row: builds
torchvision.datasets.ImageFolder(ROOT) (the listing every PyTorch ImageNet
script does before its first epoch: os.scandir of each class folder,
extension check, sorted (path, class) list; no file is opened) and prints
JSON: files, wall and CPU seconds of the listing, and the bytes of Python
objects it keeps per file (a second listing under tracemalloc, which slows
it, so it is timed apart).

Usage: peer_list_torchvision.py ROOT
"""
import gc
import json
import sys
import time
import tracemalloc

import torchvision


def main():
    root = sys.argv[1]
    gc.collect()
    t0, c0 = time.perf_counter(), time.process_time()
    ds = torchvision.datasets.ImageFolder(root)
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    n = len(ds.samples)
    del ds
    gc.collect()
    tracemalloc.start()
    ds = torchvision.datasets.ImageFolder(root)
    gc.collect()
    kept, _ = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    print(json.dumps({"files": n, "wall_s": wall, "cpu_s": cpu, "kept_bytes_per_file": kept / max(n, 1)}))
    del ds


if __name__ == "__main__":
    main()
