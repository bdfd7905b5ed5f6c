#!/usr/bin/python3
"""The table of bench/gpu_table.sh: reads the cells' JSON files in DIR
(written by the script: <engine>.<data>.<strategy>.<variant>.json, a
`faster bench train --json` summary for ours, the peer's JSON for torch,
or <...>.err holding a failed cell's error) and prints, per data set, the
study's rows (single, dp, ddp) and columns (plain, autotune, amp,
autotune+amp), each cell "ours | torch" as seconds, ms per step and test
accuracy, then the ResNet-18 row; it writes the same as DIR/table.json.
A cell that failed shows "failed" (its error is listed under the table);
one that did not run, "-".

Usage: gpu_table.py DIR
"""
import json
import os
import sys

# "single+graph": ours with --cuda-graph (each step a replayed CUDA graph),
# beside the peer's single cell (PyTorch's eager steps).
STRATEGIES = ["single", "single+graph", "dp", "ddp"]
VARIANTS = ["plain", "autotune", "amp", "autotune+amp"]


def read_cells(d):
    """{(engine, data, strategy, variant): figures or {"error": text}}"""
    cells = {}
    for name in sorted(os.listdir(d)):
        stem, ext = os.path.splitext(name)
        parts = stem.split(".")
        if ext not in (".json", ".err") or len(parts) != 4:
            continue
        key = tuple(parts)
        path = os.path.join(d, name)
        with open(path) as f:
            text = f.read()
        if ext == ".err":
            cells.setdefault(key, {"error": text.strip().splitlines()[-1] if text.strip() else "failed"})
            continue
        try:
            cells[key] = figures(parts[0], json.loads(text))
        except (ValueError, KeyError, IndexError, TypeError) as e:
            cells[key] = {"error": "%s: unreadable output: %s" % (name, e)}
    return cells


def figures(engine, j):
    """A cell's seconds, ms per step, images/s and test accuracy."""
    if engine == "ours" and "cells" in j:  # faster bench train --json
        c = j["cells"][0]
        return {"seconds": c["seconds"], "ms_per_step": c.get("ms_per_step", 0), "images_per_sec": c["images_per_sec"],
                "test_accuracy": c["test_accuracy"], "device": j.get("device", "")}
    # faster train --json, or the peer's
    f = {"seconds": j["seconds"], "ms_per_step": j.get("ms_per_step", 0), "images_per_sec": j["images_per_sec"],
         "test_accuracy": j["test_accuracy"], "device": j.get("device", ""),
         "last_epoch_images_per_sec": j["per_epoch"][-1]["images_per_sec"]}
    if j.get("batch") and f["last_epoch_images_per_sec"] > 0:  # the last epoch's step, past the first's warm-up
        f["last_epoch_ms_per_step"] = 1000 * j["batch"] / f["last_epoch_images_per_sec"]
    return f


def read_floors(d):
    """floors.json (bench/gpu_where.py --floors): {data: {prec: {"floor_ms"}}}, or {}."""
    try:
        with open(os.path.join(d, "floors.json")) as f:
            return json.load(f)
    except (OSError, ValueError):
        return {}


# The precision each column's step runs in: fp32 with TF32 (PyTorch's
# default), the study's AMP (fp16 with a GradScaler).
PRECISION = {"plain": "tf32", "autotune": "tf32", "amp": "fp16", "autotune+amp": "fp16"}


def floor_line(data, cells, floors):
    """The data's floors per precision and, for ours and torch, the cell
    nearest its floor as a multiple of it."""
    fl = floors.get(data)
    if not fl:
        return None
    parts = ["floor a step (%.1f GFLOP at the dense peak, %.0f MB at the bandwidth): tf32 %.2f ms, fp16 %.2f ms"
             % (fl["gflops_per_step"], fl["mb_per_step"], fl["tf32"]["floor_ms"], fl["fp16"]["floor_ms"])]
    for engine in ("ours", "torch"):
        best = None
        for (e, dn, s, v), c in cells.items():
            if e != engine or dn != data or v not in PRECISION or "error" in c or not c.get("ms_per_step"):
                continue
            x = c["ms_per_step"] / fl[PRECISION[v]]["floor_ms"]
            if best is None or x < best[0]:
                best = (x, s, v)
        if best:
            parts.append("%s nearest: %.1f× (%s %s)" % (engine, best[0], best[1], best[2]))
    return "; ".join(parts)


def text(c):
    if c is None:
        return "-"
    if "error" in c:
        return "failed"
    return "%.2fs %.1fms %.1f%%" % (c["seconds"], c["ms_per_step"], 100 * c["test_accuracy"])


def main():
    d = sys.argv[1] if len(sys.argv) > 1 else "."
    cells = read_cells(d)
    floors = read_floors(d)
    datas = sorted({k[1] for k in cells if k[2] in STRATEGIES})
    out = {"cells": [{"engine": k[0], "data": k[1], "strategy": k[2], "variant": k[3], **v} for k, v in sorted(cells.items())]}
    for data in datas:
        print("\n%s: ours | torch (seconds, ms per step, test accuracy)" % data)
        rows = [["", *VARIANTS]]
        for s in STRATEGIES:
            if s == "single+graph" and not any(("ours", data, s, v) in cells for v in VARIANTS):
                continue  # not run for this data
            row = [s]
            for v in VARIANTS:
                peer = "single" if s == "single+graph" else s
                ours, torch = cells.get(("ours", data, s, v)), cells.get(("torch", data, peer, v))
                row.append("-" if ours is None and torch is None else "%s | %s" % (text(ours), text(torch)))
            rows.append(row)
        widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
        for r in rows:
            print("  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip())
        line = floor_line(data, cells, floors)
        if line:
            print(line)
    res = {k: v for k, v in cells.items() if k[2] == "resnet18"}
    if res:
        rf = floors.get("resnet18", {}).get("bf16", {}).get("floor_ms")
        print("\nresnet18 224 bf16, batch 256: the last epoch's images/s and ms per step%s"
              % (" (floor %.2f ms a step)" % rf if rf else ""))
        for k, v in sorted(res.items()):
            if "error" in v:
                print("  %-5s %-26s failed" % (k[0], k[1]))
            else:
                ms = v.get("last_epoch_ms_per_step", v["ms_per_step"])
                print("  %-5s %-26s %.0f images/s (%.1f ms a step%s)" % (k[0], k[1], v.get("last_epoch_images_per_sec", v["images_per_sec"]),
                                                                       ms, ", %.1f× the floor" % (ms / rf) if rf and ms else ""))
    if floors:
        out["floors"] = floors
    failed = [(k, v["error"]) for k, v in sorted(cells.items()) if "error" in v]
    if failed:
        print("\nfailed cells:")
        for k, e in failed:
            print("  %s: %s" % (".".join(k), e[:300]))
    with open(os.path.join(d, "table.json"), "w") as f:
        json.dump(out, f, indent=1)
    ok = sum(1 for v in cells.values() if "error" not in v)
    print("\n%d cells ran, %d failed" % (ok, len(failed)))


if __name__ == "__main__":
    main()
