"""One rank of the journey's PyTorch leg: packed shards through
faster.Loader into a torch DistributedDataParallel loop over gloo (CPU), as
a user would write it. Started twice by journey_test.go with torchrun's
environment (RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT).

Each rank trains two epochs (set_epoch before each), records the keys it
was served per epoch (repeats apart), then opens a fresh loader at epoch 1
and records its keys too. Rank 0 gathers everything and prints one JSON
line: steps per rank and epoch, the keys served, the repeats reported, the
fresh loader's epoch-1 keys per rank.

usage: journey_ddp.py DATA RESOLUTION BATCH CLASSES
"""
import faulthandler
import json
import os
import sys

import torch
import torch.distributed as dist
import torch.nn as nn

import faster


def keys_of(loader, epoch, model=None, opt=None):
    loader.set_epoch(epoch)
    steps, keys, repeats = 0, [], 0
    for b in loader.batches():
        images, labels = torch.as_tensor(b.images), torch.as_tensor(b.labels)
        if model is not None:
            opt.zero_grad(set_to_none=True)
            loss = nn.functional.cross_entropy(model(images), labels)
            loss.backward()  # every rank, every step: a skipped backward would hang DDP
            opt.step()
        n = len(b.keys) - b.repeats
        keys += b.keys[:n]
        repeats += b.repeats
        steps += 1
    return steps, keys, repeats


def main():
    # A hang prints every thread's Python stack before the test's guard
    # (5 minutes) kills the rank, so the failure says where it stuck.
    faulthandler.dump_traceback_later(240, exit=True)
    data, res, batch, classes = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(),
                          nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(8, classes))
    ddp = nn.parallel.DistributedDataParallel(model)
    opt = torch.optim.SGD(ddp.parameters(), lr=0.01)
    loader = faster.Loader(data, batch_size=batch, transform="train", resolution=res, seed=5,
                           rank=rank, world_size=world, output="numpy", workers=1)
    out = {"len": len(loader), "epochs": []}
    for e in range(2):
        steps, keys, repeats = keys_of(loader, e, ddp, opt)
        out["epochs"].append({"steps": steps, "keys": keys, "repeats": repeats})
    loader.close()
    fresh = faster.Loader(data, batch_size=batch, transform="train", resolution=res, seed=5,
                          rank=rank, world_size=world, output="numpy", workers=1)
    out["fresh1"] = keys_of(fresh, 1)[1]
    fresh.close()
    gathered = [None] * world
    dist.all_gather_object(gathered, out)
    if rank == 0:
        print(json.dumps({"ranks": gathered}), flush=True)
    dist.destroy_process_group()
    # All work is done and both loaders are closed (their servers gone,
    # their shared memory removed). Leave without the interpreter's
    # finalization: with Debian's torch 1.13 and gloo, rank 0 sometimes
    # hung there after main() returned (faulthandler: the main thread at
    # the module's main() line, one thread in C code), once in three runs
    # on a loaded machine.
    sys.stderr.flush()
    os._exit(0)


if __name__ == "__main__":
    main()
