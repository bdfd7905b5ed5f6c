#!/usr/bin/python3
"""CIFAR-10 training in the style of the popular pytorch-cifar main.py:
torchvision's CIFAR10 objects with RandomCrop(32, padding=4) +
RandomHorizontalFlip + ToTensor + Normalize, DataLoader(shuffle=True,
num_workers=2), SGD with cosine annealing; with --loader faster the two
DataLoader lines become faster.Loader lines (marked LOADER), nothing else.

    PYTHONPATH=python FASTER_BIN=bin/faster /usr/bin/python3 examples/cifar_main.py \\
        --data ROOT --loader faster --epochs 1
"""
import argparse
import json

import torch
import torch.nn as nn
import torch.optim as optim
import torchvision
import torchvision.transforms as transforms


def make_model(classes=10):
    """A small VGG-like network, so that CPU runs stay short."""
    return nn.Sequential(
        nn.Conv2d(3, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(inplace=True), nn.MaxPool2d(2),
        nn.Conv2d(16, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(inplace=True), nn.MaxPool2d(2),
        nn.Conv2d(32, 64, 3, padding=1), nn.BatchNorm2d(64), nn.ReLU(inplace=True),
        nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(64, classes))


def main():
    parser = argparse.ArgumentParser(description="PyTorch CIFAR10 Training (DataLoader or faster.Loader)")
    parser.add_argument("--lr", default=0.1, type=float)
    parser.add_argument("--epochs", default=1, type=int)
    parser.add_argument("--data", default="./data", help="torchvision's root (holding cifar-10-batches-py)")
    parser.add_argument("--loader", choices=("torch", "faster"), default="torch")
    parser.add_argument("--seed", default=0, type=int)
    parser.add_argument("--max-steps", type=int, default=0, help="stop each epoch after this many steps (tests)")
    parser.add_argument("--evaluate-first", action="store_true", help="test before training too (tests)")
    parser.add_argument("--result", default="", help="write the test results and the trace as JSON")
    args = parser.parse_args()
    torch.manual_seed(args.seed)
    torch.set_num_threads(1)

    transform_train = transforms.Compose([
        transforms.RandomCrop(32, padding=4),
        transforms.RandomHorizontalFlip(),
        transforms.ToTensor(),
        transforms.Normalize((0.4914, 0.4822, 0.4465), (0.2023, 0.1994, 0.2010)),
    ])
    transform_test = transforms.Compose([
        transforms.ToTensor(),
        transforms.Normalize((0.4914, 0.4822, 0.4465), (0.2023, 0.1994, 0.2010)),
    ])
    trainset = torchvision.datasets.CIFAR10(root=args.data, train=True, download=False, transform=transform_train)
    testset = torchvision.datasets.CIFAR10(root=args.data, train=False, download=False, transform=transform_test)
    # ---- LOADER ----
    if args.loader == "faster":
        import faster
        trainloader = faster.Loader(trainset, batch_size=128, shuffle=True, num_workers=2)
        testloader = faster.Loader(testset, batch_size=100, shuffle=False, num_workers=2)
    else:
        trainloader = torch.utils.data.DataLoader(trainset, batch_size=128, shuffle=True, num_workers=2)
        testloader = torch.utils.data.DataLoader(testset, batch_size=100, shuffle=False, num_workers=2)
    # ----------------

    net = make_model(len(trainset.classes))
    criterion = nn.CrossEntropyLoss()
    optimizer = optim.SGD(net.parameters(), lr=args.lr, momentum=0.9, weight_decay=5e-4)
    scheduler = optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=200)
    result = {"trace": [], "tests": []}

    def test():
        net.eval()
        loss_sum, correct, seen = 0.0, 0, 0
        with torch.no_grad():
            for inputs, targets in testloader:
                outputs = net(inputs)
                loss_sum += criterion(outputs, targets).item() * len(targets)
                correct += outputs.max(1)[1].eq(targets).sum().item()
                seen += len(targets)
        print("test: loss %.4f acc %d/%d" % (loss_sum / max(seen, 1), correct, seen))
        result["tests"].append({"loss_sum": loss_sum, "correct": correct, "seen": seen})

    if args.evaluate_first:
        test()
    for epoch in range(args.epochs):
        net.train()
        for step, (inputs, targets) in enumerate(trainloader):
            optimizer.zero_grad()
            loss = criterion(net(inputs), targets)
            loss.backward()
            optimizer.step()
            result["trace"].append({"epoch": epoch, "step": step, "shape": list(inputs.shape),
                                    "labels": targets.tolist(), "loss": loss.item()})
            if args.max_steps and step + 1 >= args.max_steps:
                break
        test()
        scheduler.step()
    if args.result:
        with open(args.result, "w") as f:
            json.dump(result, f)


if __name__ == "__main__":
    main()
