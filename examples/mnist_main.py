#!/usr/bin/python3
"""MNIST training in the style of pytorch/examples mnist/main.py: the same
dataset objects, transform, model and loop, with the DataLoader lines swapped
for faster.Loader when --loader faster (the lines marked LOADER are the only
ones that differ). --dataset fashion reads FashionMNIST (Debian's
dataset-fashion-mnist, gunzipped into ROOT/FashionMNIST/raw as torchvision
keeps it).

    PYTHONPATH=python FASTER_BIN=bin/faster /usr/bin/python3 examples/mnist_main.py \\
        --data ROOT --dataset fashion --loader faster --epochs 1
"""
import argparse
import json

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim
from torch.optim.lr_scheduler import StepLR
from torchvision import datasets, transforms


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 16, 3, 1)
        self.conv2 = nn.Conv2d(16, 32, 3, 1)
        self.dropout = nn.Dropout(0.25)
        self.fc1 = nn.Linear(4608, 64)
        self.fc2 = nn.Linear(64, 10)

    def forward(self, x):
        x = F.relu(self.conv1(x))
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        x = torch.flatten(self.dropout(x), 1)
        return F.log_softmax(self.fc2(F.relu(self.fc1(x))), dim=1)


def train(args, model, train_loader, optimizer, epoch, trace):
    model.train()
    for batch_idx, (data, target) in enumerate(train_loader):
        optimizer.zero_grad()
        loss = F.nll_loss(model(data), target)
        loss.backward()
        optimizer.step()
        if trace is not None:
            trace.append({"epoch": epoch, "step": batch_idx, "shape": list(data.shape),
                          "labels": target.tolist(), "loss": loss.item()})
        if batch_idx % args.log_interval == 0:
            print("Train Epoch: {} [{}/{}]\tLoss: {:.6f}".format(epoch, batch_idx * len(data),
                                                                len(train_loader.dataset), loss.item()))
        if args.dry_run or (args.max_steps and batch_idx + 1 >= args.max_steps):
            break


def test(model, test_loader):
    model.eval()
    test_loss, correct, seen = 0.0, 0, 0
    with torch.no_grad():
        for data, target in test_loader:
            output = model(data)
            test_loss += F.nll_loss(output, target, reduction="sum").item()
            correct += output.argmax(dim=1).eq(target).sum().item()
            seen += len(target)
    print("Test set: Average loss: {:.4f}, Accuracy: {}/{}".format(test_loss / seen, correct, seen))
    return {"loss_sum": test_loss, "correct": correct, "seen": seen}


def main():
    parser = argparse.ArgumentParser(description="PyTorch MNIST Example (DataLoader or faster.Loader)")
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--test-batch-size", type=int, default=1000)
    parser.add_argument("--epochs", type=int, default=1)
    parser.add_argument("--lr", type=float, default=1.0)
    parser.add_argument("--gamma", type=float, default=0.7)
    parser.add_argument("--dry-run", action="store_true")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--log-interval", type=int, default=10)
    parser.add_argument("--data", default="../data", help="torchvision's root of the dataset")
    parser.add_argument("--dataset", choices=("mnist", "fashion"), default="mnist")
    parser.add_argument("--loader", choices=("torch", "faster"), default="torch")
    parser.add_argument("--max-steps", type=int, default=0, help="stop each epoch after this many steps (tests)")
    parser.add_argument("--evaluate-first", action="store_true", help="test before training too (tests)")
    parser.add_argument("--result", default="", help="write the test results and the trace as JSON")
    args = parser.parse_args()
    torch.manual_seed(args.seed)
    torch.set_num_threads(1)

    train_kwargs = {"batch_size": args.batch_size}
    test_kwargs = {"batch_size": args.test_batch_size}
    transform = transforms.Compose([transforms.ToTensor(), transforms.Normalize((0.1307,), (0.3081,))])
    kind = datasets.FashionMNIST if args.dataset == "fashion" else datasets.MNIST
    dataset1 = kind(args.data, train=True, download=False, transform=transform)
    dataset2 = kind(args.data, train=False, transform=transform)
    # ---- LOADER ----
    if args.loader == "faster":
        import faster
        train_loader = faster.Loader(dataset1, **train_kwargs)
        test_loader = faster.Loader(dataset2, **test_kwargs)
    else:
        train_loader = torch.utils.data.DataLoader(dataset1, **train_kwargs)
        test_loader = torch.utils.data.DataLoader(dataset2, **test_kwargs)
    # ----------------

    model = Net()
    optimizer = optim.Adadelta(model.parameters(), lr=args.lr)
    scheduler = StepLR(optimizer, step_size=1, gamma=args.gamma)
    result = {"trace": [], "tests": []}
    if args.evaluate_first:
        result["tests"].append(test(model, test_loader))
    for epoch in range(1, args.epochs + 1):
        train(args, model, train_loader, optimizer, epoch, result["trace"])
        result["tests"].append(test(model, test_loader))
        scheduler.step()
    if args.result:
        with open(args.result, "w") as f:
            json.dump(result, f)


if __name__ == "__main__":
    main()
