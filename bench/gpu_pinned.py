"""The pinned hand-off on a CUDA machine (issue 38, item 3): what
faster.Loader(pin_memory=True) gives a training loop's
.cuda(non_blocking=True), beside DataLoader's way (torch's pin_memory()
copy, then the copy to the device) and a pageable copy, on the same
batches. Prints one JSON line per way: GB/s of the host-to-device copy
(the batch's bytes over the copy's CUDA-event time), the Python-side time
per batch, whether the yielded batch is pinned as it lies.

PREPARED, NOT YET RUN: written on a machine without a GPU; the first
session with the H200 runs it (FASTER_BIN=bin/faster, an ImageFolder DIR):
    python3 bench/gpu_pinned.py DIR [--batches 50] [--batch 256]
"""
import argparse
import json
import time

import torch

import faster


def run(data, way, batches, batch):
    pin = way == "faster-pinned-ring"
    loader = faster.Loader(data, batch_size=batch, transform="train", resolution=224, layout="u8-hwc",
                           pin_memory=pin, seed=1)
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    copy_ms, host_s, nbytes, n, pinned = 0.0, 0.0, 0, 0, None
    for images, labels in loader:
        t = time.perf_counter()
        if way == "torch-pin-memory-copy":
            images = images.pin_memory()  # DataLoader's pin_memory thread does this copy
        if pinned is None:
            pinned = bool(images.is_pinned())
        start.record()
        x = images.cuda(non_blocking=True)
        end.record()
        host_s += time.perf_counter() - t
        end.synchronize()
        copy_ms += start.elapsed_time(end)
        nbytes += images.numel() * images.element_size()
        del x
        n += 1
        if n == batches:
            break
    loader.close()
    return {"way": way, "batches": n, "gb_per_s": nbytes / (copy_ms / 1e3) / 1e9, "host_ms_per_batch": 1e3 * host_s / n,
            "pinned_as_yielded": pinned}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("data")
    ap.add_argument("--batches", type=int, default=50)
    ap.add_argument("--batch", type=int, default=256)
    a = ap.parse_args()
    for way in ("faster-pinned-ring", "torch-pin-memory-copy", "pageable"):
        print(json.dumps(run(a.data, way, a.batches, a.batch)), flush=True)


if __name__ == "__main__":
    main()
