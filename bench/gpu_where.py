#!/usr/bin/python3
"""Where a training step's time goes on the GPU, and its floor (issue 37
§2–3: "launch gaps are one suspect for PyTorch's 10–14 ms; measure where
its time goes"; "count its FLOPs and bytes and write the floor beside the
figure").

For each model (ThinNet on 3×32×32 at batch 512, the study's; ResNet-18 at
224, batch 256) and precision, PyTorch's step (SGD, cudnn.benchmark;
fp16 with a GradScaler, bf16 autocast, or fp32 with TF32 allowed) is timed
three ways on one GPU-resident batch:
  eager_ms    the step as a training loop runs it (wall time per step)
  kernels_ms  the sum of the step's GPU kernel and memcpy/memset times
              (torch.profiler): the device's busy time; eager − kernels is
              what launch gaps and host work cost
  graph_ms    the same step captured once as a CUDA graph and replayed
              (torch.cuda.graph): what is left with the launches gone
and its floor is computed from the model's shapes: FLOPs (2 per
multiply-add; forward + backward = 3× the forward's convolutions and
products) at the GPU's dense peak for that precision, and bytes (every
activation written once and read twice, the weights, gradients and
momentum read and written by SGD) at its memory bandwidth; the floor is
the larger. Prints JSON lines, a table last.

PREPARED, NOT YET RUN on a GPU (scripts/h200.sh bench). Here its flow
runs on the CPU (--device cpu: no graph, the profiler's CPU times):
    /usr/bin/python3 bench/gpu_where.py --device cpu --steps 2 --warmup 1 --small
"""
import argparse
import importlib.util
import json
import os
import time

import torch

HERE = os.path.dirname(os.path.abspath(__file__))

# H200 SXM's dense peaks (NVIDIA's datasheet: FP16/BF16 989 TFLOPS and
# TF32 494 TFLOPS dense tensor core, FP32 67 TFLOPS; HBM3e 4.8 TB/s).
PEAK = {"fp16": 989e12, "bf16": 989e12, "tf32": 494e12, "fp32": 67e12}
BANDWIDTH = 4.8e12


def grad_scaler():
    """torch.amp.GradScaler("cuda") where torch has it (2.3 on: no
    FutureWarning on 2.11), else torch.cuda.amp.GradScaler() (torch 1.13)."""
    gs = getattr(getattr(torch, "amp", None), "GradScaler", None)
    return gs("cuda") if gs is not None else torch.cuda.amp.GradScaler()


def thinnet(in_channels, classes, filters=None):
    """The peer's ThinNet (bench/peer_thinnet_torch.py), with its filters
    unless filters is given."""
    spec = importlib.util.spec_from_file_location("peer", os.path.join(HERE, "peer_thinnet_torch.py"))
    peer = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(peer)
    if filters:
        return peer.thinnet(in_channels=in_channels, classes=classes, filters=filters)
    return peer.thinnet(in_channels=in_channels, classes=classes)


def count(model, x):
    """FLOPs of a training step (3× the forward's convolutions and linear
    layers) and its bytes (activations written once, read twice; every
    parameter read by the forward and backward, its gradient written and
    read, SGD reading and writing weights and momentum)."""
    macs = [0]
    act = [0]

    def hook(m, inp, out):
        if isinstance(m, torch.nn.Conv2d):
            k = m.kernel_size[0] * m.kernel_size[1] * (m.in_channels // m.groups)
            macs[0] += out.numel() * k
        elif isinstance(m, torch.nn.Linear):
            macs[0] += out.numel() * m.in_features
        if isinstance(out, torch.Tensor):
            act[0] += out.numel() * out.element_size()

    hs = [m.register_forward_hook(hook) for m in model.modules() if len(list(m.children())) == 0]
    with torch.no_grad():
        model(x)
    for h in hs:
        h.remove()
    params = sum(p.numel() * 4 for p in model.parameters())
    flops = 3 * 2 * macs[0]
    nbytes = 3 * act[0] + 2 * params + 2 * params + 4 * params
    return flops, nbytes


def floor_ms(flops, nbytes, prec, device):
    """The step's floor in ms at prec's dense peak and the bandwidth, and
    what sets it ("flops" or "bytes")."""
    peak = PEAK["fp32" if (prec == "tf32" and device.type != "cuda") else prec]
    by = "flops" if flops / peak >= nbytes / BANDWIDTH else "bytes"
    return max(flops / peak, nbytes / BANDWIDTH) * 1e3, by


def model_of(name, c, classes, device, filters=None):
    if name == "thinnet":
        return thinnet(c, classes, filters).to(device)
    import torchvision
    return torchvision.models.resnet18(num_classes=classes).to(device).to(memory_format=torch.channels_last)


def floors(cases, device):
    """--floors: each case NAME=MODEL:C:SIDE:BATCH:CLASSES[:F1,F2,...] (the
    last part ThinNet's filters) counted once, its floor at each precision
    the table's columns use (tf32: fp32 with TF32, PyTorch's default;
    fp16: the study's AMP; bf16)."""
    out = {}
    for case in cases:
        name, spec = case.split("=", 1)
        parts = spec.split(":")
        model, c, side, batch, classes = parts[0], int(parts[1]), int(parts[2]), int(parts[3]), int(parts[4])
        filters = tuple(int(f) for f in parts[5].split(",")) if len(parts) > 5 and parts[5] else None
        torch.manual_seed(0)
        m = model_of(model, c, classes, device, filters)
        x = torch.zeros(batch, c, side, side, device=device)
        flops, nbytes = count(m, x)
        row = {"model": model, "side": side, "batch": batch, "flops": flops, "bytes": nbytes, "gflops_per_step": round(flops / 1e9, 3),
               "mb_per_step": round(nbytes / 1e6, 2), "device": str(device)}
        for prec in ("tf32", "fp16", "bf16"):
            ms, by = floor_ms(flops, nbytes, prec, device)
            row[prec] = {"floor_ms": round(ms, 4), "floor_by": by}
        out[name] = row
        print("%s: %s %d×%d×%d batch %d: %.1f GFLOP, %.0f MB a step; floor tf32 %.3f ms, fp16 %.3f ms, bf16 %.3f ms"
              % (name, model, c, side, side, batch, flops / 1e9, nbytes / 1e6, row["tf32"]["floor_ms"], row["fp16"]["floor_ms"],
                 row["bf16"]["floor_ms"]), flush=True)
    return out


def step_fn(model, x, y, prec, device):
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    loss_fn = torch.nn.CrossEntropyLoss()
    scaler = grad_scaler() if prec == "fp16" and device.type == "cuda" else None
    dtype = {"fp16": torch.float16, "bf16": torch.bfloat16}.get(prec)

    def step():
        opt.zero_grad(set_to_none=True)
        with torch.autocast(device_type=device.type, dtype=dtype or torch.bfloat16, enabled=dtype is not None):
            loss = loss_fn(model(x), y)
        if scaler:
            scaler.scale(loss).backward()
            scaler.step(opt)
            scaler.update()
        else:
            loss.backward()
            opt.step()
        return loss
    return step, opt


def sync(device):
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def timed(fn, steps, device):
    sync(device)
    t = time.perf_counter()
    for _ in range(steps):
        fn()
    sync(device)
    return (time.perf_counter() - t) / steps * 1e3


def kernel_ms(step, steps, device):
    from torch.profiler import profile, ProfilerActivity
    acts = [ProfilerActivity.CUDA] if device.type == "cuda" else [ProfilerActivity.CPU]
    with profile(activities=acts) as prof:
        for _ in range(steps):
            step()
        sync(device)
    total = 0.0
    for e in prof.key_averages():
        if device.type == "cuda":
            v = getattr(e, "self_device_time_total", None)  # torch 2.4+; self_cuda_time_total before
            total += v if v is not None else e.self_cuda_time_total
        else:
            total += e.self_cpu_time_total
    return total / 1e3 / steps


def graph_ms(model, x, y, prec, device, steps):
    """The whole step captured as a CUDA graph (PyTorch's whole-network
    capture recipe: warm up on a side stream, capture, replay)."""
    if device.type != "cuda":
        return None
    if prec == "fp16":  # GradScaler's step reads its flag on the host: not capturable whole
        return None
    step, opt = step_fn(model, x, y, prec, device)
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(3):
            step()
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    opt.zero_grad(set_to_none=True)
    with torch.cuda.graph(g):
        step()
    return timed(g.replay, steps, device)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--warmup", type=int, default=10)
    ap.add_argument("--small", action="store_true", help="toy sizes (the flow's check on a CPU)")
    ap.add_argument("--floors", metavar="FILE", help="only count each --case's FLOPs and bytes and write its floors to FILE (JSON)")
    ap.add_argument("--case", action="append", default=[], help="with --floors: NAME=MODEL:C:SIDE:BATCH:CLASSES[:FILTERS]")
    a = ap.parse_args()
    device = torch.device(a.device)
    if a.floors:
        out = floors(a.case, device)
        tmp = a.floors + ".tmp"
        with open(tmp, "w") as f:
            json.dump(out, f, indent=1)
        os.replace(tmp, a.floors)
        return
    if device.type == "cuda":
        torch.backends.cudnn.benchmark = True
        # TF32 for the "tf32" rows: torch 2.9+ names it fp32_precision and
        # warns on the old switches (mixing the two raises).
        conv = getattr(torch.backends.cudnn, "conv", None)
        if hasattr(torch.backends.cuda.matmul, "fp32_precision") and hasattr(conv, "fp32_precision"):
            torch.backends.cuda.matmul.fp32_precision = "tf32"
            conv.fp32_precision = "tf32"
        else:
            torch.backends.cuda.matmul.allow_tf32 = True
            torch.backends.cudnn.allow_tf32 = True
    cases = [("thinnet", 3, 32, 512, 10, p) for p in ("tf32", "fp16", "bf16")] + [("resnet18", 3, 224, 256, 1000, "bf16")]
    if a.small:
        cases = [("thinnet", 3, 32, 8, 10, "fp32"), ("resnet18", 3, 32, 4, 10, "bf16")]
    rows = []
    for name, c, side, batch, classes, prec in cases:
        torch.manual_seed(0)
        model = model_of(name, c, classes, device)
        x = torch.randn(batch, c, side, side, device=device)
        if name == "resnet18":
            x = x.contiguous(memory_format=torch.channels_last)
        y = torch.randint(0, classes, (batch,), device=device)
        flops, nbytes = count(model, x)
        floor, by = floor_ms(flops, nbytes, prec, device)
        row = {"model": name, "side": side, "batch": batch, "precision": prec, "device": str(device),
               "gflops_per_step": round(flops / 1e9, 2), "mb_per_step": round(nbytes / 1e6, 1),
               "floor_ms": round(floor, 3), "floor_by": by}
        try:
            step, _ = step_fn(model, x, y, prec, device)
            timed(step, a.warmup, device)
            row["eager_ms"] = round(timed(step, a.steps, device), 3)
            row["kernels_ms"] = round(kernel_ms(step, max(3, a.steps // 3), device), 3)
            g = graph_ms(model, x, y, prec, device, a.steps)
            if g is not None:
                row["graph_ms"] = round(g, 3)
            row["eager_of_floor"] = round(row["eager_ms"] / floor, 1)
        except Exception as e:
            row["error"] = "%s: %s" % (type(e).__name__, e)
        print(json.dumps(row), flush=True)
        rows.append(row)
    print("%-9s %-5s %5s %8s %8s %9s %10s %9s %6s" % ("model", "prec", "batch", "GFLOP", "MB", "floor ms", "eager ms", "kernels", "graph"))
    for r in rows:
        print("%-9s %-5s %5d %8s %8s %9s %10s %9s %6s" % (r["model"], r["precision"], r["batch"], r["gflops_per_step"], r["mb_per_step"],
                                                        r["floor_ms"], r.get("eager_ms", r.get("error", "-")[:10]), r.get("kernels_ms", "-"), r.get("graph_ms", "-")))


if __name__ == "__main__":
    main()
