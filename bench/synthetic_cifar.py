#!/usr/bin/python3
"""Writes synthetic 3x32x32 images in CIFAR-10's python-batch format (the
study's input shape): OUT/data_batch_1..5 and OUT/test_batch (pickles of
b"data": N x 3072 uint8 and b"labels"), and OUT/batches.meta, which faster
(source.OpenCIFAR) and bench/peer_thinnet_torch.py both read.

Each image is its class's pattern (a colour and a stripe frequency) plus
noise, so a model can learn it and the accuracy columns mean something.

Usage: synthetic_cifar.py OUT [--train 50000] [--test 10000] [--seed 1]
"""
import argparse
import os
import pickle

import numpy as np


def images(n, rng):
    y = rng.integers(0, 10, n)
    cols = np.arange(32)[None, None, :]
    base = np.empty((n, 3, 32, 32), np.float32)
    for k in range(10):
        m = y == k
        colour = np.array([(k * 37) % 256, (k * 91) % 256, (k * 53) % 256], np.float32)[:, None, None]
        stripes = 48 * np.sin(cols * (k + 1) * np.pi / 16)
        base[m] = colour + stripes
    x = base + rng.normal(0, 40, base.shape)
    return np.clip(x, 0, 255).astype(np.uint8).reshape(n, 3072), [int(v) for v in y]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--train", type=int, default=50000)
    ap.add_argument("--test", type=int, default=10000)
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    rng = np.random.default_rng(a.seed)
    per = -(-a.train // 5)
    for i in range(5):
        n = min(per, a.train - i * per)
        x, y = images(max(n, 0), rng)
        with open(os.path.join(a.out, "data_batch_%d" % (i + 1)), "wb") as f:
            pickle.dump({b"batch_label": b"synthetic", b"data": x, b"labels": y}, f, protocol=2)
    x, y = images(a.test, rng)
    with open(os.path.join(a.out, "test_batch"), "wb") as f:
        pickle.dump({b"batch_label": b"synthetic", b"data": x, b"labels": y}, f, protocol=2)
    names = [b"class%d" % k for k in range(10)]
    with open(os.path.join(a.out, "batches.meta"), "wb") as f:
        pickle.dump({b"label_names": names, b"num_cases_per_batch": per, b"num_vis": 3072}, f, protocol=2)


if __name__ == "__main__":
    main()
