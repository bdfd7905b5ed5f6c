#!/usr/bin/python3
"""PyTorch CPU peer of `faster train`: the seed's ThinNet on Fashion-MNIST.

Same model (3x3 conv without padding or bias -> ReLU -> BatchNorm; filters
32/64/128, blocks 2/2/2; adaptive average pool 2x2; linear), same data
(IDX files, pixels/255 normalised with mean 0.2860, std 0.3530 for Fashion-MNIST,
MNIST's 0.1307, 0.3081 otherwise, as faster train), same
optimiser (SGD, momentum, no weight decay by default), same batching (a
random permutation per epoch, last partial batch dropped). The dataset is
preloaded as one tensor so no DataLoader overhead is measured: this is
PyTorch's fastest path. Prints a JSON summary with the same keys as
`faster train --json` (images_per_sec, test_accuracy, seconds, epochs).

--ddp N runs N processes of torch DistributedDataParallel over gloo
(--threads split between them; rank r trains on part r of each global
batch, as `faster train --strategy ddp` does); --rank R --world W runs
this process as rank R of W instead (MASTER_ADDR and MASTER_PORT from the
environment, --threads its own: one process per machine); --bucket-kb sets
DDP's bucket_cap_mb; --time-allreduce N times, after training, N rounds of
a step's all-reduces alone (DDP's buckets, issued at once as its reducer
does, no compute) and reports them, with the buckets and DDP's own logged
backward/communication times, under "ddp" as `faster train --json` does;
--amp runs the forward pass under torch.autocast("cpu", dtype=torch.bfloat16).

The fast recipe, flag by flag as `faster train` (--recipe fast sets them
where not given): --schedule onecycle (torch.optim.lr_scheduler.OneCycleLR,
cycle_momentum=False, stepped after each step), --label-smoothing
(nn.CrossEntropyLoss(label_smoothing)), --nesterov (torch.optim.SGD),
--resolution-schedule (per epoch; each batch resized with
F.interpolate(bilinear, antialias=True), the test split at full size),
--ema (torch.optim.swa_utils.AveragedModel(use_buffers=True) with avg_fn
decay*avg + (1-decay)*p, evaluated instead of the model; --ema-warmup:
decay min(decay, (1+n)/(10+n)) after n updates), --tta flip (mean
of the logits of each image and its mirror). --eval-every N evaluates on
the test split every N steps (outside the training clock) into "curve";
--target-accuracy A stops at the first evaluation reaching A and reports
"seconds_to_target".

--init-from CKPT starts from the parameters and BatchNorm statistics of a
faster checkpoint (train/checkpoint.go: "FSTRCKP1", JSON header, float32
tensors, CRC-32C; ThinNet's tensors are in the order of this model's
parameters, then its BatchNorm buffers), and --order-from NPY takes the
training images of epoch e in row e of an int32 .npy instead of
torch.randperm: `faster bench train --same-start` writes both from ours, so
that the two engines run the same training.

--device cuda runs it on the GPU (the study's GPU run, issue 37 section 3):
--input gpu (default) keeps the whole dataset on the GPU and indexes the
batches there; --input loader feeds CPU tensors through a DataLoader (4
workers, pin_memory, .to(non_blocking=True)); --cudnn-benchmark sets
torch.backends.cudnn.benchmark; --amp is then fp16 autocast with a
GradScaler (--amp-dtype bf16: bf16, no scaler). With one GPU, --dp N runs
N replicas of the model in this process, each on its own CUDA stream and
its part of the batch, their gradients summed into the first (whose step
is copied to the others): torch.nn.DataParallel cannot use one GPU twice;
--ddp N runs N processes sharing the GPU over gloo (NCCL refuses two ranks
on one GPU). The training loss is accumulated on the GPU and read once per
epoch. --model resnet18 (torchvision's, channels_last on the GPU) and
--synthetic N (N random 3 x --resolution^2 images of 10 classes, made on
the device) give the ResNet-18 row. --data may also be a CIFAR-10 python
batches folder (data_batch_*, test_batch). The JSON adds "device" and
"ms_per_step".

Run with Debian's python3-torch: /usr/bin/python3 bench/peer_thinnet_torch.py --data DIR
"""
import argparse
import copy
import gzip
import json
import os
import pickle
import sys
import time

import numpy as np
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn
import torch.nn.functional as F


def grad_scaler():
    """torch.amp.GradScaler("cuda") where torch has it (2.3 on: no
    FutureWarning on 2.11), else torch.cuda.amp.GradScaler() (torch 1.13)."""
    gs = getattr(getattr(torch, "amp", None), "GradScaler", None)
    return gs("cuda") if gs is not None else torch.cuda.amp.GradScaler()


def read_idx(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rb") as f:
        data = f.read()
    ndim = data[3]
    dims = [int.from_bytes(data[4 + 4 * i:8 + 4 * i], "big") for i in range(ndim)]
    return np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * ndim).reshape(dims)


def find(d, name):
    for ext in ("", ".gz"):
        p = os.path.join(d, name + ext)
        if os.path.exists(p):
            return p
    sys.exit("no %s[.gz] in %s" % (name, d))


def load_cifar(d, prefix, limit):
    """CIFAR-10's python batches (data_batch_1..5, test_batch): N x 3 x 32 x 32 bytes."""
    names = ["test_batch"] if prefix == "t10k" else sorted(n for n in os.listdir(d) if n.startswith("data_batch_"))
    xs, ys = [], []
    for n in names:
        with open(os.path.join(d, n), "rb") as f:
            b = pickle.load(f, encoding="bytes")
        xs.append(np.asarray(b[b"data"], dtype=np.uint8).reshape(-1, 3, 32, 32))
        ys.append(np.asarray(b[b"labels"], dtype=np.int64))
    x, y = np.concatenate(xs), np.concatenate(ys)
    if limit:
        x, y = x[:limit], y[:limit]
    mean = torch.tensor([0.485, 0.456, 0.406]).view(1, 3, 1, 1)  # faster's recipe default (ImageNet's)
    std = torch.tensor([0.229, 0.224, 0.225]).view(1, 3, 1, 1)
    x = (torch.from_numpy(x.astype(np.float32)) / 255 - mean) / std
    return x.contiguous(), torch.from_numpy(y)


def synthetic(n, side, seed, device):
    """n random 3 x side x side images of 10 classes, made on device."""
    g = torch.Generator(device=device).manual_seed(seed)
    x = torch.randn(n, 3, side, side, generator=g, device=device)
    y = torch.randint(0, 10, (n,), generator=g, device=device)
    return x, y


def load(d, prefix, limit):
    if os.path.exists(os.path.join(d, "test_batch")):
        return load_cifar(d, prefix, limit)
    x = read_idx(find(d, prefix + "-images-idx3-ubyte"))
    y = read_idx(find(d, prefix + "-labels-idx1-ubyte"))
    if limit:
        x, y = x[:limit], y[:limit]
    # faster train's statistics: Fashion-MNIST's when the directory's name
    # says so (source.OpenIDX), else MNIST's, as torchvision's examples.
    fashion = "fashion" in os.path.basename(os.path.normpath(d)).lower()
    mean, std = (0.2860, 0.3530) if fashion else (0.1307, 0.3081)
    x = (torch.from_numpy(x.astype(np.float32)) / 255 - mean) / std
    return x.unsqueeze(1).contiguous(), torch.from_numpy(y.astype(np.int64))


def crc32c(data):
    table = []
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
        table.append(c)
    crc = 0xFFFFFFFF
    for b in data:
        crc = table[(crc ^ b) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


def load_faster_checkpoint(model, path):
    """Copies a faster checkpoint's parameters and BatchNorm statistics into model."""
    with open(path, "rb") as f:
        data = f.read()
    if len(data) < 16 or data[:8] != b"FSTRCKP1":
        sys.exit("%s: not a faster checkpoint" % path)
    body = data[:-4]
    if crc32c(body) != int.from_bytes(data[-4:], "little"):
        sys.exit("%s: checksum mismatch" % path)
    hl = int.from_bytes(body[8:12], "little")
    header = json.loads(body[12:12 + hl])
    off, saved = 12 + hl, []
    for t in header["tensors"]:
        n = t["len"]
        if not t["name"].startswith(("momentum:", "ema:")):
            saved.append((t["name"], np.frombuffer(body, dtype="<f4", count=n, offset=off)))
        off += 4 * n
    ours = list(model.parameters()) + [b for m in model.modules() if isinstance(m, nn.BatchNorm2d)
                                      for b in (m.running_mean, m.running_var)]
    if len(saved) != len(ours):
        sys.exit("%s: %d tensors, the model has %d" % (path, len(saved), len(ours)))
    with torch.no_grad():
        for (name, v), t in zip(saved, ours):
            if v.size != t.numel():
                sys.exit("%s: %s has %d values, the model's tensor %s" % (path, name, v.size, tuple(t.shape)))
            t.copy_(torch.from_numpy(v.copy()).view_as(t))


def progressive(full, epochs):
    """faster train's progressiveSchedule: 70% of full up to full, even sides."""
    if epochs <= 1:
        return [full]
    even = lambda v: 2 * int(round(v / 2))  # Go's math.Round halves away from 0; the values here are never halves
    lo = even(0.7 * full)
    out = [min(full, even(lo + (full - lo) * i / (epochs - 1))) for i in range(epochs)]
    out[-1] = full
    return out


def thinnet(in_channels=1, classes=10, filters=(32, 64, 128), blocks=(2, 2, 2)):
    layers, cin = [], in_channels
    for f, b in zip(filters, blocks):
        for _ in range(1 + b):
            layers += [nn.Conv2d(cin, f, 3, bias=False), nn.ReLU(inplace=True), nn.BatchNorm2d(f)]
            cin = f
    return nn.Sequential(*layers, nn.AdaptiveAvgPool2d((2, 2)), nn.Flatten(), nn.Linear(cin * 4, classes))


def flag(v):
    """A boolean flag's value as Go's flag package reads it (--x=false)."""
    if v.lower() in ("1", "t", "true"):
        return True
    if v.lower() in ("0", "f", "false"):
        return False
    raise argparse.ArgumentTypeError("not a boolean: %r" % v)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", default="/usr/share/datasets/fashion-mnist")
    ap.add_argument("--epochs", type=int, default=1)
    ap.add_argument("--batch", type=int, default=512)
    ap.add_argument("--lr", type=float, default=0.001)
    ap.add_argument("--momentum", type=float, default=0.9)
    ap.add_argument("--weight-decay", type=float, default=0.0)
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--limit", type=int, default=0)
    ap.add_argument("--test-limit", type=int, default=0)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--ddp", type=int, default=0, help="processes of DistributedDataParallel (gloo)")
    ap.add_argument("--amp", action="store_true", help="bf16 autocast")
    ap.add_argument("--port", type=int, default=29533)
    ap.add_argument("--rank", type=int, default=-1, help="this process's rank of --world (one process per machine)")
    ap.add_argument("--world", type=int, default=0)
    ap.add_argument("--bucket-kb", type=int, default=0, help="DDP bucket_cap_mb in KiB (0: torch's 25 MiB)")
    ap.add_argument("--time-allreduce", type=int, default=0, help="after training, time N rounds of a step's all-reduces alone")
    ap.add_argument("--filters", default="32,64,128", help="ThinNet's stage widths")
    ap.add_argument("--recipe", default="", choices=["", "fast"])
    ap.add_argument("--schedule", default=None, choices=["constant", "onecycle"])
    ap.add_argument("--pct-start", type=float, default=0.3)
    ap.add_argument("--div-factor", type=float, default=25.0)
    ap.add_argument("--final-div-factor", type=float, default=1e4)
    ap.add_argument("--label-smoothing", type=float, default=None)
    ap.add_argument("--nesterov", nargs="?", const=True, default=None, type=flag, help="--nesterov, --nesterov=false")
    ap.add_argument("--ema", type=float, default=None)
    ap.add_argument("--ema-warmup", action="store_true", default=None)
    ap.add_argument("--tta", default=None, choices=["none", "flip"])
    ap.add_argument("--resolution-schedule", default=None, help="e.g. 20,24,28 or auto")
    ap.add_argument("--eval-every", type=int, default=0)
    ap.add_argument("--target-accuracy", type=float, default=0.0)
    ap.add_argument("--init-from", default="", help="start from the weights and BatchNorm statistics of this faster checkpoint")
    ap.add_argument("--order-from", default="", help="take the training images in this .npy's order (int32, epochs x images)")
    ap.add_argument("--device", default="cpu", help="cpu or cuda[:N]")
    ap.add_argument("--input", default="gpu", choices=["gpu", "loader"], help="cuda: batches already on the GPU, or CPU tensors through a pinned DataLoader")
    ap.add_argument("--workers", type=int, default=4, help="--input loader: DataLoader workers")
    ap.add_argument("--cudnn-benchmark", action="store_true", help="torch.backends.cudnn.benchmark")
    ap.add_argument("--amp-dtype", default=None, choices=["bf16", "fp16"], help="--amp's dtype (default: bf16 on the cpu, fp16 with a GradScaler on cuda)")
    ap.add_argument("--dp", type=int, default=0, help="cuda: N replicas in this process, each on its own stream")
    ap.add_argument("--model", default="thinnet", choices=["thinnet", "resnet18"])
    ap.add_argument("--synthetic", type=int, default=0, help="N random 3 x --resolution^2 images of 10 classes made on the device (no --data)")
    ap.add_argument("--resolution", type=int, default=32, help="--synthetic's side")
    a = ap.parse_args()
    a.cuda = a.device.startswith("cuda")
    if a.device == "cuda":
        a.device = "cuda:0"  # torch.cuda.set_device and DDP's device_ids want the index
    if a.cuda and not torch.cuda.is_available():
        sys.exit("--device %s: torch %s sees no GPU (torch.cuda.is_available() is False)" % (a.device, torch.__version__))
    if a.amp_dtype is None:
        a.amp_dtype = "fp16" if a.cuda else "bf16"
    if (a.dp > 1 or a.input == "loader" or a.cudnn_benchmark) and not a.cuda:
        sys.exit("--dp, --input loader and --cudnn-benchmark go with --device cuda")
    # faster train's fastRecipe (cmd/faster/train_recipe.go), where not given.
    fast = {"schedule": "onecycle", "lr": 0.2, "weight_decay": 5e-4, "label_smoothing": 0.1, "nesterov": True,
            "ema": 0.99, "ema_warmup": True, "tta": "flip", "resolution_schedule": "auto"}
    plain = {"schedule": "constant", "label_smoothing": 0.0, "nesterov": False, "ema": 0.0, "ema_warmup": False, "tta": "none",
             "resolution_schedule": ""}
    given = {k.lstrip("-").split("=")[0].replace("-", "_") for k in sys.argv[1:] if k.startswith("--")}
    for k, v in (fast if a.recipe == "fast" else {}).items():
        if k not in given:
            setattr(a, k, v)
    for k, v in plain.items():
        if getattr(a, k) is None:
            setattr(a, k, v)
    if a.rank >= 0:
        run(a.rank, a)
    elif a.ddp > 1:
        mp.spawn(run, args=(a,), nprocs=a.ddp)
    else:
        run(0, a)


def run(rank, a):
    world = a.world if a.rank >= 0 else max(a.ddp, 1)
    if world > 1:
        os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
        os.environ.setdefault("MASTER_PORT", str(a.port))
        dist.init_process_group("gloo", rank=rank, world_size=world)
    torch.set_num_threads(a.threads if a.rank >= 0 else max(1, a.threads // world))
    torch.manual_seed(a.seed)
    dev = torch.device(a.device)
    if a.cuda:
        torch.cuda.set_device(dev)  # ddp's ranks share the one GPU
        torch.backends.cudnn.benchmark = a.cudnn_benchmark
    if a.synthetic:
        xtr, ytr = synthetic(a.synthetic, a.resolution, a.seed, dev)
        xte, yte = synthetic(max(a.batch, a.test_limit or a.batch), a.resolution, a.seed + 1, dev)
    else:
        xtr, ytr = load(a.data, "train", a.limit)
        xte, yte = load(a.data, "t10k", a.test_limit)
    filters = [int(f) for f in a.filters.split(",")]
    classes = max(10, int(ytr.max()) + 1)
    if a.model == "resnet18":
        import torchvision
        model = torchvision.models.resnet18(num_classes=classes)
    else:
        model = thinnet(in_channels=xtr.shape[1], classes=classes, filters=filters, blocks=[2] * len(filters))
    mem_fmt = torch.channels_last if a.cuda and a.model == "resnet18" else torch.contiguous_format
    model = model.to(dev, memory_format=mem_fmt)
    if a.cuda and a.input == "gpu":
        xtr, ytr, xte, yte = xtr.to(dev), ytr.to(dev), xte.to(dev), yte.to(dev)
    if a.init_from:
        load_faster_checkpoint(model, a.init_from)
    order = None
    if a.order_from:
        try:
            order = np.load(a.order_from)
        except (OSError, ValueError) as e:
            sys.exit("%s: not an .npy of each epoch's order: %s" % (a.order_from, e))
        if order.ndim != 2 or order.shape[0] < a.epochs or order.shape[1] != len(xtr):
            sys.exit("%s: shape %s, want (%d epochs, %d images)" % (a.order_from, order.shape, a.epochs, len(xtr)))
    ddp_kw = {"bucket_cap_mb": a.bucket_kb / 1024} if a.bucket_kb > 0 else {}
    if a.cuda and world > 1:
        ddp_kw["device_ids"] = [dev.index]
    net = torch.nn.parallel.DistributedDataParallel(model, **ddp_kw) if world > 1 else model
    opt = torch.optim.SGD(model.parameters(), lr=a.lr, momentum=a.momentum, weight_decay=a.weight_decay,
                          nesterov=a.nesterov)
    amp_dtype = torch.float16 if a.amp_dtype == "fp16" else torch.bfloat16
    scaler = grad_scaler() if a.amp and a.cuda and amp_dtype == torch.float16 else None
    autocast = lambda: torch.autocast("cuda" if a.cuda else "cpu", dtype=amp_dtype, enabled=a.amp)
    replicas = [model] + [copy.deepcopy(model) for _ in range(max(a.dp, 1) - 1)]
    streams = [torch.cuda.Stream() for _ in replicas] if len(replicas) > 1 else None
    sync = torch.cuda.synchronize if a.cuda else (lambda: None)
    loss_fn = nn.CrossEntropyLoss(label_smoothing=a.label_smoothing)
    steps = len(xtr) // a.batch
    local = a.batch // world
    sched = None
    if a.schedule == "onecycle":
        sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=a.lr, total_steps=a.epochs * steps, pct_start=a.pct_start,
                                                    div_factor=a.div_factor, final_div_factor=a.final_div_factor,
                                                    anneal_strategy="cos", cycle_momentum=False)
    ema = None
    if a.ema > 0:
        def avg_fn(avg, p, n, d=a.ema):
            if a.ema_warmup:  # TensorFlow's num_updates warm-up, as faster's EMA.Warmup
                d = min(d, (1 + float(n)) / (10 + float(n)))
            return d * avg + (1 - d) * p
        ema = torch.optim.swa_utils.AveragedModel(model, avg_fn=avg_fn, use_buffers=True)
    full = xtr.shape[-1]
    res = []
    if a.resolution_schedule == "auto":
        res = progressive(full, a.epochs)
    elif a.resolution_schedule:
        res = [int(v) for v in a.resolution_schedule.split(",")]

    def evaluate():
        m = ema.module if ema is not None and ema.n_averaged > 0 else model
        m.eval()
        correct, loss, t0 = 0, 0.0, time.perf_counter()
        loss_t, correct_t = torch.zeros((), device=dev, dtype=torch.float64), torch.zeros((), device=dev, dtype=torch.int64)
        with torch.no_grad(), autocast():
            for i in range(0, len(xte), a.batch):
                x, y = xte[i:i + a.batch].to(dev, non_blocking=True), yte[i:i + a.batch].to(dev, non_blocking=True)
                x = x.contiguous(memory_format=mem_fmt)
                out = m(x)
                if a.tta == "flip":
                    out = (out + m(x.flip(3))) / 2
                out = out.float()
                loss_t += F.cross_entropy(out, y, reduction="sum")
                correct_t += (out.argmax(1) == y).sum()
        correct, loss = int(correct_t), float(loss_t)  # one read (and sync) per evaluation
        model.train()
        return correct / len(xte), loss / len(xte), time.perf_counter() - t0

    images, seconds, per_epoch, curve, eval_seconds = 0, 0.0, [], [], 0.0
    cpu_seconds = 0.0  # process CPU time (all threads) over the same stretches as seconds
    to_target, steps_to_target, acc, gstep = None, 0, 0.0, 0

    def point():
        nonlocal to_target, steps_to_target, eval_seconds, acc
        acc, tl, es = evaluate()
        eval_seconds += es
        curve.append({"step": gstep, "epoch": gstep / steps, "seconds": seconds, "test_accuracy": acc, "test_loss": tl})
        if a.target_accuracy > 0 and to_target is None and acc >= a.target_accuracy:
            to_target, steps_to_target = seconds, gstep
        return to_target is not None

    done = False
    for epoch in range(a.epochs):
        if done:
            break
        side = res[min(epoch, len(res) - 1)] if res else full
        model.train()
        # The same seed (or order) on every rank: the same global batches.
        perm = torch.from_numpy(order[epoch].astype(np.int64)) if order is not None else torch.randperm(len(xtr))
        parts = [perm[s * a.batch + rank * local:s * a.batch + (rank + 1) * local] for s in range(steps)]
        if a.cuda and a.input == "loader":
            batches = iter(torch.utils.data.DataLoader(torch.utils.data.TensorDataset(xtr, ytr), batch_sampler=[p.tolist() for p in parts],
                                                       num_workers=a.workers, pin_memory=True, persistent_workers=False))
        elif a.cuda:
            parts = [p.to(dev) for p in parts]
        sync()
        t0, tot, dt, n = time.perf_counter(), 0.0, 0.0, 0
        tot_t = torch.zeros((), device=dev)  # cuda: the loss summed on the GPU, read at the epoch's end
        c0 = time.process_time()
        for s in range(steps):
            if a.cuda and a.input == "loader":
                x, y = next(batches)
                x, y = x.to(dev, non_blocking=True), y.to(dev, non_blocking=True)
            else:
                idx = parts[s]
                x, y = xtr[idx], ytr[idx]
            x = x.contiguous(memory_format=mem_fmt)
            if side != full:
                x = F.interpolate(x, size=(side, side), mode="bilinear", antialias=True, align_corners=False)
            for r in replicas:
                r.zero_grad(set_to_none=True)
            if streams is None:
                with autocast():
                    loss = loss_fn(net(x), y)
                (scaler.scale(loss) if scaler else loss).backward()
            else:
                loss = dp_step(replicas, streams, x, y, loss_fn, autocast, scaler)
            if scaler:
                scaler.step(opt)
                scaler.update()
            else:
                opt.step()
            if streams is not None:  # the first replica's step, copied to the others
                with torch.no_grad():
                    for r in replicas[1:]:
                        for p, q in zip(model.parameters(), r.parameters()):
                            q.copy_(p)
            if sched is not None:
                sched.step()
            if ema is not None:
                ema.update_parameters(model)
            if a.cuda:
                tot_t += loss.detach().float()
            else:
                tot += float(loss)
            n += 1
            gstep += 1
            if a.eval_every > 0 and gstep % a.eval_every == 0 and s < steps - 1:
                sync()
                now = time.perf_counter()
                dt += now - t0
                seconds += now - t0
                cpu_seconds += time.process_time() - c0
                if point():
                    done = True
                    break
                t0 = time.perf_counter()
                c0 = time.process_time()
        if not done:
            sync()
            now = time.perf_counter()
            dt += now - t0
            seconds += now - t0
            cpu_seconds += time.process_time() - c0
            done = point()
        if a.cuda:
            tot = float(tot_t)
        images += n * a.batch
        per_epoch.append({"epoch": epoch + 1, "train_loss": tot / max(n, 1), "test_accuracy": acc, "resolution": side,
                          "images": n * a.batch, "seconds": dt, "images_per_sec": n * a.batch / max(dt, 1e-9)})
    comm = None
    if world > 1:
        ld = net._get_ddp_logging_data()
        sizes = [int(v) for v in str(ld.get("rebuilt_bucket_sizes") or ld.get("bucket_sizes", "")).replace(",", " ").split()]
        comm = {"bucket_bytes": sizes, "steps": gstep,
                # DDP's logger, over the iterations it samples (the first ten, then every 100th), in ns.
                "logged_avg_backward_compute_ns": ld.get("avg_backward_compute_time"),
                "logged_avg_backward_comm_ns": ld.get("avg_backward_comm_time"),
                "logged_avg_backward_compute_comm_overlap_ns": ld.get("avg_backward_compute_comm_overlap_time")}
        if a.time_allreduce > 0:
            bufs = [torch.zeros(n // 4) for n in sizes]  # float32 gradients
            dist.barrier()
            t0 = time.perf_counter()
            for _ in range(a.time_allreduce):
                for w in [dist.all_reduce(b, async_op=True) for b in bufs]:
                    w.wait()
            comm["allreduce_alone_seconds_per_step"] = (time.perf_counter() - t0) / a.time_allreduce
            comm["allreduce_alone_rounds"] = a.time_allreduce
    if rank == 0:
        print(json.dumps({"model": a.model, "ddp": comm, "backend": "pytorch-%s" % torch.__version__, "threads": a.threads,
                          "device": str(dev), "input": a.input if a.cuda else "cpu", "cudnn_benchmark": a.cudnn_benchmark,
                          "amp_dtype": a.amp_dtype if a.amp else "fp32", "devices": len(replicas),
                          "ms_per_step": 1000 * seconds / max(gstep, 1),
                          "strategy": "ddp" if world > 1 else "dp" if len(replicas) > 1 else "single", "world_size": world, "amp": a.amp,
                          "batch": a.batch, "lr": a.lr, "epochs": a.epochs, "images": images, "seconds": seconds, "cpu_seconds": cpu_seconds,
                          "images_per_sec": images / seconds, "test_accuracy": acc,
                          "recipe": a.recipe, "schedule": a.schedule, "label_smoothing": a.label_smoothing,
                          "nesterov": a.nesterov, "ema": a.ema, "ema_warmup": a.ema_warmup, "tta": a.tta, "resolution_schedule": res,
                          "curve": curve, "eval_seconds": eval_seconds, "target_accuracy": a.target_accuracy,
                          "seconds_to_target": to_target, "steps_to_target": steps_to_target,
                          "per_epoch": per_epoch}, indent=2))
    if world > 1:
        dist.destroy_process_group()


def dp_step(replicas, streams, x, y, loss_fn, autocast, scaler):
    """One data-parallel step on one GPU: each replica's forward and backward
    on its part of the batch and its own stream, the loss of the whole batch
    being the parts' means weighted by their sizes; the gradients summed into
    the first replica's. Returns the batch's loss."""
    main = torch.cuda.current_stream()
    xs, ys = x.chunk(len(replicas)), y.chunk(len(replicas))
    losses = []
    for r, st, xp, yp in zip(replicas, streams, xs, ys):
        st.wait_stream(main)  # the batch is ready
        with torch.cuda.stream(st):
            with autocast():
                loss = loss_fn(r(xp), yp) * (len(yp) / len(y))
            (scaler.scale(loss) if scaler else loss).backward()
            losses.append(loss.detach())
    for st in streams:
        main.wait_stream(st)
    with torch.no_grad():
        for r in replicas[1:]:
            for p, q in zip(replicas[0].parameters(), r.parameters()):
                p.grad += q.grad
    return sum(losses)


if __name__ == "__main__":
    main()
