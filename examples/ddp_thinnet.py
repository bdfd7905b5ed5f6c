#!/usr/bin/python3
"""The Faster Training study's DDP training pattern with faster.Loader instead of DataLoader.

ThinNet (3x3 convolutions without padding -> ReLU -> BatchNorm, filters
32/64/128, adaptive average pool 2x2, linear) on CIFAR-style 32x32 RGB
images: the train recipe (random-resized-crop to 32, flip, normalise) of
`faster serve` over an ImageFolder of photographs, e.g. the one
bench/imagefolder.py makes. Each rank's Loader starts its own server, which
reads that rank's disjoint shard; every rank takes the same number of steps.

CPU, gloo backend, 2 processes:

    go build -o bin/faster ./cmd/faster
    tree=$(/usr/bin/python3 bench/imagefolder.py /tmp/faster-imagefolder 10 50)
    PYTHONPATH=python FASTER_BIN=bin/faster /usr/bin/python3 examples/ddp_thinnet.py "$tree" --steps 5

or under torchrun (which sets RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT;
the Loader takes rank and world size from them):

    PYTHONPATH=python FASTER_BIN=bin/faster torchrun --nproc_per_node 2 examples/ddp_thinnet.py "$tree"
"""
import argparse
import os
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

import faster


def thinnet(in_channels=3, classes=10, filters=(32, 64, 128), blocks=(2, 2, 2)):
    layers, cin = [], in_channels
    for f, b in zip(filters, blocks):
        for _ in range(1 + b):
            layers += [nn.Conv2d(cin, f, 3, bias=False), nn.ReLU(inplace=True), nn.BatchNorm2d(f)]
            cin = f
    return nn.Sequential(*layers, nn.AdaptiveAvgPool2d((2, 2)), nn.Flatten(), nn.Linear(cin * 4, classes))


def train(rank, world, a):
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", str(a.port))
    dist.init_process_group("gloo", rank=rank, world_size=world)
    torch.manual_seed(a.seed)
    torch.set_num_threads(a.threads)
    device = torch.device("cuda", rank) if torch.cuda.is_available() else torch.device("cpu")

    # Was: sampler = DistributedSampler(dataset)
    #      loader = DataLoader(dataset, batch_size=..., sampler=sampler, num_workers=..., pin_memory=True)
    loader = faster.Loader(a.data, batch_size=a.batch, transform="train", resolution=32,
                           seed=a.seed, workers=a.workers, drop_last=True)  # rank, world from the group

    model = thinnet(3, len(loader.classes) or 10).to(device)
    model = DDP(model, device_ids=[rank] if device.type == "cuda" else None)
    crit = nn.CrossEntropyLoss()
    opt = torch.optim.SGD(model.parameters(), lr=a.lr, momentum=0.9)
    t0, seen = time.perf_counter(), 0
    for epoch in range(a.epochs):
        loader.set_epoch(epoch)  # was: sampler.set_epoch(epoch)
        for step, (images, labels) in enumerate(loader):
            if a.steps and step >= a.steps:
                break
            # The batch views shared memory until the next one is asked for;
            # .to(device, non_blocking=True) copies it (on CPU it is used in place).
            images = images.to(device, non_blocking=True)
            labels = labels.to(device, non_blocking=True)
            loss = crit(model(images), labels)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            seen += labels.shape[0]
            if rank == 0:
                print("epoch %d step %d loss %.4f" % (epoch, step, loss.item()), flush=True)
    el = time.perf_counter() - t0
    total = torch.tensor([seen])
    dist.all_reduce(total)
    if rank == 0:
        print("done: %d ranks, %d images in %.1fs (%.0f images/s)" % (world, total.item(), el, total.item() / el))
    loader.close()
    dist.destroy_process_group()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("data", help="ImageFolder root (or packed shards)")
    ap.add_argument("--nproc", type=int, default=2, help="processes when not under torchrun")
    ap.add_argument("--epochs", type=int, default=1)
    ap.add_argument("--steps", type=int, default=0, help="stop each epoch after this many steps")
    ap.add_argument("--batch", type=int, default=32, help="per rank")
    ap.add_argument("--lr", type=float, default=0.01)
    ap.add_argument("--workers", type=int, default=1, help="decode threads per rank's server")
    ap.add_argument("--threads", type=int, default=1, help="torch threads per rank")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--port", type=int, default=29512)
    a = ap.parse_args()
    if "RANK" in os.environ and "WORLD_SIZE" in os.environ:  # torchrun
        train(int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"]), a)
    else:
        mp.spawn(train, args=(a.nproc, a), nprocs=a.nproc, join=True)


if __name__ == "__main__":
    main()
