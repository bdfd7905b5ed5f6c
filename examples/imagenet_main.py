#!/usr/bin/python3
"""ImageNet training in the style of pytorch/examples imagenet/main.py, with
either torchvision's ImageFolder + DataLoader (--loader torch) or
faster.Loader (--loader faster). The two versions differ only in
make_loaders() and in the loader lines of checkpointing (marked LOADER):
the training loop, the distributed evaluation and the meters are the same
code.

CPU, gloo; one process:

    go build -o bin/faster ./cmd/faster
    tree=$(/usr/bin/python3 bench/imagefolder.py /tmp/faster-imagefolder 10 50)
    PYTHONPATH=python FASTER_BIN=bin/faster /usr/bin/python3 examples/imagenet_main.py \\
        --train "$tree" --val "$tree" --loader faster --epochs 2

several processes (torchrun sets RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT):

    PYTHONPATH=python FASTER_BIN=bin/faster torchrun --redirects 1 --tee 1 --nproc_per_node 2 \\
        examples/imagenet_main.py --train "$tree" --val "$tree" --loader faster

Evaluation is exact with any number of processes: every validation image
counts once (faster: exact=True; torch: DistributedSampler(drop_last=True)
plus the remainder on rank 0), the metric all-reduced once at the end.
--save-every K checkpoints every K steps with the loader's position
(faster.Loader.state_dict, torchdata's StatefulDataLoader protocol), and
--resume continues from exactly there. --trace FILE writes one JSON line per
step (the batch's labels, and with faster its keys) for tests.
"""
import argparse
import gc
import json
import os
import random
import shutil
import time

import torch
import torch.distributed as dist
import torch.nn as nn

parser = argparse.ArgumentParser(description="PyTorch ImageNet Training (faster.Loader or DataLoader)")
parser.add_argument("--train", required=True, help="ImageFolder of training images")
parser.add_argument("--val", required=True, help="ImageFolder of validation images")
parser.add_argument("--loader", choices=("torch", "faster"), default="faster")
parser.add_argument("-j", "--workers", default=2, type=int, help="data loading workers")
parser.add_argument("--epochs", default=2, type=int)
parser.add_argument("--start-epoch", default=0, type=int)
parser.add_argument("-b", "--batch-size", default=16, type=int, help="per process")
parser.add_argument("--lr", default=0.05, type=float)
parser.add_argument("--momentum", default=0.9, type=float)
parser.add_argument("--wd", "--weight-decay", default=1e-4, type=float, dest="weight_decay")
parser.add_argument("--resolution", default=64, type=int, help="training and validation side")
parser.add_argument("-p", "--print-freq", default=10, type=int)
parser.add_argument("--resume", default="", type=str, help="checkpoint to resume from")
parser.add_argument("--save-every", default=0, type=int, help="also checkpoint every K steps")
parser.add_argument("--checkpoint", default="checkpoint.pth.tar")
parser.add_argument("-e", "--evaluate", action="store_true", help="evaluate on the validation set and stop")
parser.add_argument("--seed", default=0, type=int)
parser.add_argument("--trace", default="", help="write each step's labels (and keys) as JSON lines")
parser.add_argument("--stop-after", default=0, type=int, help="exit abruptly after this many steps (tests)")
parser.add_argument("--result", default="", help="write the final evaluation as JSON")


def make_model(classes):
    """A small ResNet-style network, so that CPU runs stay short."""
    return nn.Sequential(
        nn.Conv2d(3, 16, 3, stride=2, padding=1, bias=False), nn.BatchNorm2d(16), nn.ReLU(inplace=True),
        nn.Conv2d(16, 32, 3, stride=2, padding=1, bias=False), nn.BatchNorm2d(32), nn.ReLU(inplace=True),
        nn.Conv2d(32, 64, 3, stride=2, padding=1, bias=False), nn.BatchNorm2d(64), nn.ReLU(inplace=True),
        nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(64, classes))


# ---- LOADER: the only lines that differ between the two versions ----------
def make_loaders(args):
    """Returns train_loader, train_sampler (or None), val_loaders (their
    metrics add up to every validation image once over the ranks), classes."""
    if args.loader == "faster":
        import faster
        train_loader = faster.Loader(args.train, batch_size=args.batch_size, transform="train",
                                     resolution=args.resolution, num_workers=args.workers, seed=args.seed,
                                     pin_memory=True)
        val_loader = faster.Loader(args.val, batch_size=args.batch_size, transform="eval",
                                   resolution=args.resolution, num_workers=args.workers, exact=True)
        return train_loader, train_loader.sampler, [val_loader], train_loader.dataset.classes
    import torchvision.datasets as datasets
    import torchvision.transforms as transforms
    from torch.utils.data import DataLoader, Subset
    from torch.utils.data.distributed import DistributedSampler
    normalize = transforms.Normalize(mean=[0.485, 0.456, 0.406], std=[0.229, 0.224, 0.225])
    train_dataset = datasets.ImageFolder(args.train, transforms.Compose([
        transforms.RandomResizedCrop(args.resolution), transforms.RandomHorizontalFlip(),
        transforms.ToTensor(), normalize]))
    val_dataset = datasets.ImageFolder(args.val, transforms.Compose([
        transforms.Resize(args.resolution * 256 // 224), transforms.CenterCrop(args.resolution),
        transforms.ToTensor(), normalize]))
    train_sampler = DistributedSampler(train_dataset) if args.distributed else None
    val_sampler = DistributedSampler(val_dataset, shuffle=False, drop_last=True) if args.distributed else None
    train_loader = DataLoader(train_dataset, batch_size=args.batch_size, shuffle=(train_sampler is None),
                              num_workers=args.workers, pin_memory=True, sampler=train_sampler)
    val_loaders = [DataLoader(val_dataset, batch_size=args.batch_size, shuffle=False,
                              num_workers=args.workers, pin_memory=True, sampler=val_sampler)]
    if args.distributed and args.rank == 0 and len(val_sampler) * args.world_size < len(val_dataset):
        rest = Subset(val_dataset, range(len(val_sampler) * args.world_size, len(val_dataset)))
        val_loaders.append(DataLoader(rest, batch_size=args.batch_size, shuffle=False, num_workers=args.workers))
    return train_loader, train_sampler, val_loaders, train_dataset.classes


def loader_state(train_loader):
    return train_loader.state_dict() if hasattr(train_loader, "state_dict") else None


def load_loader_state(train_loader, state):
    if state is not None and hasattr(train_loader, "load_state_dict"):
        train_loader.load_state_dict(state)


def batch_keys(train_loader):
    return getattr(train_loader, "last_keys", None)
# ---------------------------------------------------------------------------


def main():
    args = parser.parse_args()
    args.world_size = int(os.environ.get("WORLD_SIZE", "1"))
    args.rank = int(os.environ.get("RANK", "0"))
    args.distributed = args.world_size > 1
    if args.distributed:
        dist.init_process_group("gloo", rank=args.rank, world_size=args.world_size)
    random.seed(args.seed)
    torch.manual_seed(args.seed)
    torch.set_num_threads(1)

    train_loader, train_sampler, val_loaders, classes = make_loaders(args)
    model = make_model(len(classes))
    if args.distributed:
        model = nn.parallel.DistributedDataParallel(model)
    criterion = nn.CrossEntropyLoss()
    optimizer = torch.optim.SGD(model.parameters(), args.lr, momentum=args.momentum, weight_decay=args.weight_decay)
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=30, gamma=0.1)

    best_acc1 = 0.0
    if args.resume:
        checkpoint = torch.load(args.resume, map_location="cpu")
        args.start_epoch = checkpoint["epoch"]
        best_acc1 = checkpoint["best_acc1"]
        unwrap(model).load_state_dict(checkpoint["state_dict"])
        optimizer.load_state_dict(checkpoint["optimizer"])
        scheduler.load_state_dict(checkpoint["scheduler"])
        load_loader_state(train_loader, checkpoint.get("loader"))  # LOADER
        print("=> loaded checkpoint '{}' (epoch {})".format(args.resume, checkpoint["epoch"]), flush=True)

    if args.evaluate:
        acc1, acc5, count = validate(val_loaders, model, criterion, args)
        write_result(args, acc1, acc5, count, train_loader, classes)
        del model
        finish(args)
        return

    for epoch in range(args.start_epoch, args.epochs):
        if args.distributed:
            train_sampler.set_epoch(epoch)
        train(train_loader, model, criterion, optimizer, epoch, args, best_acc1, scheduler)
        acc1, acc5, count = validate(val_loaders, model, criterion, args)
        scheduler.step()
        is_best = acc1 > best_acc1
        best_acc1 = max(acc1, best_acc1)
        if args.rank == 0:
            save_checkpoint({"epoch": epoch + 1, "state_dict": unwrap(model).state_dict(), "best_acc1": best_acc1,
                             "optimizer": optimizer.state_dict(), "scheduler": scheduler.state_dict(),
                             "loader": loader_state(train_loader)}, is_best, args.checkpoint)
    if args.epochs:
        write_result(args, acc1, acc5, count, train_loader, classes)
    del model, optimizer
    finish(args)


def finish(args):
    """Leaves the process group together, after the caller dropped its DDP
    model. Order matters with torch 1.13: a Gloo group whose last reference
    is DDP's reducer is destroyed with the GIL held, and its join waits for
    a worker thread that needs the GIL to free a tensor (pytorch#56297): a
    rank that hangs at exit now and then. Freed here by destroy_process_group,
    the group releases the GIL first."""
    if args.distributed:
        gc.collect()  # whatever of the DDP model a cycle still holds
        dist.barrier()
        dist.destroy_process_group()


def unwrap(model):
    """The model without DDP's wrapper, so a checkpoint loads with any
    number of processes."""
    return model.module if isinstance(model, nn.parallel.DistributedDataParallel) else model


def train(train_loader, model, criterion, optimizer, epoch, args, best_acc1, scheduler):
    batch_time = AverageMeter("Time", ":6.3f")
    data_time = AverageMeter("Data", ":6.3f")
    losses = AverageMeter("Loss", ":.4e")
    top1 = AverageMeter("Acc@1", ":6.2f")
    progress = ProgressMeter(len(train_loader), [batch_time, data_time, losses, top1], prefix="Epoch: [{}]".format(epoch))
    model.train()
    end = time.time()
    for i, (images, target) in enumerate(train_loader):
        data_time.update(time.time() - end)
        output = model(images)
        loss = criterion(output, target)
        acc1, = accuracy(output, target, topk=(1,))
        losses.update(loss.item(), images.size(0))
        top1.update(acc1[0], images.size(0))
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        if args.trace:
            with open("%s.rank%d" % (args.trace, args.rank), "a") as f:
                f.write(json.dumps({"epoch": epoch, "step": i, "labels": target.tolist(),
                                    "keys": batch_keys(train_loader)}) + "\n")
        batch_time.update(time.time() - end)
        end = time.time()
        if i % args.print_freq == 0:
            progress.display(i + 1)
        step = i + 1
        if args.save_every and step % args.save_every == 0 and args.rank == 0:
            save_checkpoint({"epoch": epoch, "state_dict": unwrap(model).state_dict(), "best_acc1": best_acc1,
                             "optimizer": optimizer.state_dict(), "scheduler": scheduler.state_dict(),
                             "loader": loader_state(train_loader)}, False, args.checkpoint)
            print("saved step {} of epoch {}".format(step, epoch), flush=True)
        if args.stop_after and step >= args.stop_after:
            if args.distributed:
                dist.barrier()  # the checkpoint is written before any rank dies
            os._exit(17)  # as a killed job: no cleanup


def validate(val_loaders, model, criterion, args):
    """Every validation image counts once over the ranks; the sums are
    all-reduced once, at the end (no collective per step)."""
    model.eval()
    sums = torch.zeros(4, dtype=torch.float64)  # loss sum, top-1 hits, top-5 hits, images
    with torch.no_grad():
        for loader in val_loaders:
            for images, target in loader:
                output = model(images)
                loss = criterion(output, target)
                acc1, acc5 = accuracy(output, target, topk=(1, min(5, output.size(1))))
                n = images.size(0)
                sums += torch.tensor([loss.item() * n, acc1[0].item() * n / 100, acc5[0].item() * n / 100, n],
                                     dtype=torch.float64)
    if args.distributed:
        dist.all_reduce(sums)
    count = int(sums[3].item())
    acc1, acc5 = 100 * sums[1].item() / count, 100 * sums[2].item() / count
    if args.rank == 0:
        print(" * Acc@1 {:.3f} Acc@5 {:.3f} Loss {:.4f} over {} images".format(acc1, acc5, sums[0].item() / count, count), flush=True)
    return acc1, acc5, count


def write_result(args, acc1, acc5, count, train_loader, classes):
    if args.result and args.rank == 0:
        with open(args.result, "w") as f:
            json.dump({"acc1": acc1, "acc5": acc5, "count": count, "classes": classes,
                       "train_len": len(train_loader), "train_dataset_len": len(train_loader.dataset)}, f)


def save_checkpoint(state, is_best, filename):
    tmp = filename + ".tmp"
    torch.save(state, tmp)
    os.replace(tmp, filename)  # atomic: a kill leaves the last whole checkpoint
    if is_best:
        shutil.copyfile(filename, os.path.join(os.path.dirname(filename) or ".", "model_best.pth.tar"))


class AverageMeter:
    def __init__(self, name, fmt=":f"):
        self.name, self.fmt = name, fmt
        self.val = self.avg = self.sum = self.count = 0

    def update(self, val, n=1):
        val = float(val)
        self.val = val
        self.sum += val * n
        self.count += n
        self.avg = self.sum / self.count

    def __str__(self):
        fmtstr = "{name} {val" + self.fmt + "} ({avg" + self.fmt + "})"
        return fmtstr.format(**self.__dict__)


class ProgressMeter:
    def __init__(self, num_batches, meters, prefix=""):
        num_digits = len(str(num_batches // 1))
        self.batch_fmtstr = "[{:" + str(num_digits) + "d}/" + "{:d}".format(num_batches) + "]"
        self.meters, self.prefix = meters, prefix

    def display(self, batch):
        print("\t".join([self.prefix + self.batch_fmtstr.format(batch)] + [str(m) for m in self.meters]), flush=True)


def accuracy(output, target, topk=(1,)):
    with torch.no_grad():
        maxk = max(topk)
        batch_size = target.size(0)
        _, pred = output.topk(maxk, 1, True, True)
        pred = pred.t()
        correct = pred.eq(target.view(1, -1).expand_as(pred))
        return [correct[:k].reshape(-1).float().sum(0, keepdim=True).mul_(100.0 / batch_size) for k in topk]


if __name__ == "__main__":
    main()
