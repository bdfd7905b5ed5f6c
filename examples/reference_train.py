#!/usr/bin/python3
"""Classification training in the shape of torchvision's references
(references/classification/train.py of torchvision 0.14): ImageFolder
datasets of root/train and root/val built with the presets' transforms
(objects holding a Compose in .transforms), the sampler chosen as the
reference chooses it (RASampler with --ra-sampler, else DistributedSampler
when distributed, RandomSampler / SequentialSampler on one process), and
DataLoader(dataset, batch_size, sampler=..., num_workers, pin_memory). With
--loader faster only the two DataLoader lines change (marked LOADER): the
dataset objects, transforms and samplers are handed to faster.Loader as
they are.

    PYTHONPATH=python FASTER_BIN=bin/faster torchrun --redirects 1 --tee 1 --nproc_per_node 2 \\
        examples/reference_train.py --data-path ROOT --loader faster --ra-sampler
"""
import argparse
import gc
import json
import math
import os

import torch
import torch.distributed as dist
import torch.nn as nn
import torchvision
from torchvision import transforms as T
from torchvision.transforms.functional import InterpolationMode


class ClassificationPresetTrain:
    """The reference's training preset: a Compose in .transforms."""

    def __init__(self, *, crop_size, mean=(0.485, 0.456, 0.406), std=(0.229, 0.224, 0.225),
                 interpolation=InterpolationMode.BILINEAR, hflip_prob=0.5, auto_augment_policy=None,
                 random_erase_prob=0.0):
        trans = [T.RandomResizedCrop(crop_size, interpolation=interpolation)]
        if hflip_prob > 0:
            trans.append(T.RandomHorizontalFlip(hflip_prob))
        if auto_augment_policy == "ta_wide":
            trans.append(T.TrivialAugmentWide(interpolation=interpolation))
        elif auto_augment_policy == "ra":
            trans.append(T.RandAugment(interpolation=interpolation))
        elif auto_augment_policy is not None:
            trans.append(T.AutoAugment(policy=T.AutoAugmentPolicy(auto_augment_policy), interpolation=interpolation))
        trans += [T.PILToTensor(), T.ConvertImageDtype(torch.float), T.Normalize(mean=mean, std=std)]
        if random_erase_prob > 0:
            trans.append(T.RandomErasing(p=random_erase_prob))
        self.transforms = T.Compose(trans)

    def __call__(self, img):
        return self.transforms(img)


class ClassificationPresetEval:
    def __init__(self, *, crop_size, resize_size=256, mean=(0.485, 0.456, 0.406), std=(0.229, 0.224, 0.225),
                 interpolation=InterpolationMode.BILINEAR):
        self.transforms = T.Compose([
            T.Resize(resize_size, interpolation=interpolation), T.CenterCrop(crop_size),
            T.PILToTensor(), T.ConvertImageDtype(torch.float), T.Normalize(mean=mean, std=std)])

    def __call__(self, img):
        return self.transforms(img)


class RASampler(torch.utils.data.Sampler):
    """Repeated augmentation (Hoffer et al.; DeiT): every sample of the
    shuffled epoch repeated `repetitions` times, the repeats spread over the
    ranks, each rank keeping num_selected_samples (a multiple of 256 of the
    dataset, divided over the ranks), as the reference's sampler does."""

    def __init__(self, dataset, num_replicas=None, rank=None, shuffle=True, seed=0, repetitions=3):
        if num_replicas is None:
            num_replicas = dist.get_world_size() if dist.is_available() and dist.is_initialized() else 1
        if rank is None:
            rank = dist.get_rank() if dist.is_available() and dist.is_initialized() else 0
        self.dataset = dataset
        self.num_replicas, self.rank, self.epoch = num_replicas, rank, 0
        self.num_samples = int(math.ceil(len(dataset) * float(repetitions) / num_replicas))
        self.total_size = self.num_samples * num_replicas
        self.num_selected_samples = int(math.floor(len(dataset) // 256 * 256 / num_replicas))
        self.shuffle, self.seed, self.repetitions = shuffle, seed, repetitions

    def __iter__(self):
        g = torch.Generator()
        g.manual_seed(self.seed + self.epoch)
        order = torch.randperm(len(self.dataset), generator=g).tolist() if self.shuffle else list(range(len(self.dataset)))
        order = [i for i in order for _ in range(self.repetitions)]
        order += order[:self.total_size - len(order)]
        mine = order[self.rank:self.total_size:self.num_replicas]
        return iter(mine[:self.num_selected_samples])

    def __len__(self):
        return self.num_selected_samples

    def set_epoch(self, epoch):
        self.epoch = epoch


def load_data(traindir, valdir, args):
    dataset = torchvision.datasets.ImageFolder(traindir, ClassificationPresetTrain(
        crop_size=args.train_crop_size, interpolation=InterpolationMode(args.interpolation),
        auto_augment_policy=args.auto_augment, random_erase_prob=args.random_erase))
    dataset_test = torchvision.datasets.ImageFolder(valdir, ClassificationPresetEval(
        crop_size=args.val_crop_size, resize_size=args.val_resize_size, interpolation=InterpolationMode(args.interpolation)))
    if args.distributed:
        if args.ra_sampler:
            train_sampler = RASampler(dataset, shuffle=True, repetitions=args.ra_reps)
        else:
            train_sampler = torch.utils.data.distributed.DistributedSampler(dataset)
        test_sampler = torch.utils.data.distributed.DistributedSampler(dataset_test, shuffle=False)
    else:
        train_sampler = torch.utils.data.RandomSampler(dataset)
        test_sampler = torch.utils.data.SequentialSampler(dataset_test)
    return dataset, dataset_test, train_sampler, test_sampler


def main():
    p = argparse.ArgumentParser(description="PyTorch Classification Training (reference shape)")
    p.add_argument("--data-path", required=True)
    p.add_argument("--loader", choices=("torch", "faster"), default="torch")
    p.add_argument("-b", "--batch-size", default=16, type=int)
    p.add_argument("--epochs", default=1, type=int)
    p.add_argument("-j", "--workers", default=0, type=int)
    p.add_argument("--lr", default=0.1, type=float)
    p.add_argument("--interpolation", default="bilinear")
    p.add_argument("--train-crop-size", default=48, type=int)
    p.add_argument("--val-resize-size", default=55, type=int)
    p.add_argument("--val-crop-size", default=48, type=int)
    p.add_argument("--auto-augment", default=None)
    p.add_argument("--random-erase", default=0.0, type=float)
    p.add_argument("--ra-sampler", action="store_true")
    p.add_argument("--ra-reps", default=3, type=int)
    p.add_argument("--seed", default=0, type=int)
    p.add_argument("--test-only", action="store_true")
    p.add_argument("--result", default="", help="write per-epoch sample counts and test sums as JSON (rank 0)")
    args = p.parse_args()
    args.world_size = int(os.environ.get("WORLD_SIZE", "1"))
    args.rank = int(os.environ.get("RANK", "0"))
    args.distributed = args.world_size > 1
    if args.distributed:
        dist.init_process_group("gloo", rank=args.rank, world_size=args.world_size)
    torch.manual_seed(args.seed)
    torch.set_num_threads(1)

    dataset, dataset_test, train_sampler, test_sampler = load_data(
        os.path.join(args.data_path, "train"), os.path.join(args.data_path, "val"), args)
    # ---- LOADER ----
    if args.loader == "faster":
        import faster
        data_loader = faster.Loader(dataset, batch_size=args.batch_size, sampler=train_sampler,
                                    num_workers=args.workers, pin_memory=True)
        data_loader_test = faster.Loader(dataset_test, batch_size=args.batch_size, sampler=test_sampler,
                                         num_workers=args.workers, pin_memory=True)
    else:
        data_loader = torch.utils.data.DataLoader(dataset, batch_size=args.batch_size, sampler=train_sampler,
                                                  num_workers=args.workers, pin_memory=True)
        data_loader_test = torch.utils.data.DataLoader(dataset_test, batch_size=args.batch_size, sampler=test_sampler,
                                                       num_workers=args.workers, pin_memory=True)
    # ----------------

    model = nn.Sequential(
        nn.Conv2d(3, 16, 3, stride=2, padding=1, bias=False), nn.BatchNorm2d(16), nn.ReLU(inplace=True),
        nn.Conv2d(16, 32, 3, stride=2, padding=1, bias=False), nn.BatchNorm2d(32), nn.ReLU(inplace=True),
        nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(32, len(dataset.classes)))
    if args.distributed:
        model = nn.parallel.DistributedDataParallel(model)
    criterion = nn.CrossEntropyLoss()
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)
    result = {"epochs": [], "tests": [], "train_len": len(data_loader), "test_len": len(data_loader_test)}

    def evaluate():
        model.eval()
        sums = torch.zeros(3, dtype=torch.float64)
        with torch.inference_mode():
            for image, target in data_loader_test:
                output = model(image)
                sums += torch.tensor([criterion(output, target).item() * len(target),
                                      output.argmax(1).eq(target).sum().item(), len(target)], dtype=torch.float64)
        if args.distributed:
            dist.all_reduce(sums)
        result["tests"].append(sums.tolist())

    evaluate()
    if not args.test_only:
        for epoch in range(args.epochs):
            if args.distributed:
                train_sampler.set_epoch(epoch)
            model.train()
            labels = []
            for image, target in data_loader:
                loss = criterion(model(image), target)
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
                labels += target.tolist()
            counts = torch.tensor([len(labels)], dtype=torch.int64)
            per_rank = [torch.zeros(1, dtype=torch.int64) for _ in range(args.world_size)]
            if args.distributed:
                dist.all_gather(per_rank, counts)
            else:
                per_rank = [counts]
            result["epochs"].append({"samples_per_rank": [int(c.item()) for c in per_rank],
                                     "label_sum": sum(labels)})
            evaluate()
    if args.result and args.rank == 0:
        with open(args.result, "w") as f:
            json.dump(result, f)
    del model, optimizer
    if args.distributed:
        gc.collect()
        dist.barrier()
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
