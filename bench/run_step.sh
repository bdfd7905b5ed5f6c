#!/usr/bin/env bash
# The training-step table: ThinNet on Fashion-MNIST at batch 512 with
# `faster train` (Go engine on oneDNN) and with PyTorch on the CPU
# (bench/peer_thinnet_torch.py), same threads, batch, learning rate and
# momentum, for each thread count. Each round runs ours and PyTorch's peer
# one after the other, alternating which goes first, under nice -n -10 and
# /usr/bin/time (peak RSS). Prints, per thread count, the median ms/step
# of each, the median of the rounds' ratios with their spread, each one's
# CPU time per step (the process's, all threads: on a loaded machine the
# steadier measure of work), peak RSS and mean training loss over the same
# steps (the two start from
# different random weights, so the losses agree statistically, not
# bit for bit).
#
#   bench/run_step.sh [DATA]
#   env: THREADS_LIST ("1 2"), BATCH (512), STEPS (8 per run; the first
#        includes creating the primitives, in both), ROUNDS (3), LR (0.001),
#        FILTERS (ThinNet's stage widths, both engines; default the study's 32,64,128),
#        OURS_FLAGS (extra `faster train` flags, e.g. "--winograd=false" for direct convolutions; the README's step table ran with the default, Winograd)
set -euo pipefail
cd "$(dirname "$0")/.."
DATA=${1:-/usr/share/datasets/fashion-mnist}
THREADS_LIST=${THREADS_LIST:-"1 2"}
BATCH=${BATCH:-512}
STEPS=${STEPS:-8}
ROUNDS=${ROUNDS:-3}
LR=${LR:-0.001}
OURS_FLAGS=${OURS_FLAGS:-}
FILTERS=${FILTERS:-32,64,128}
PY=/usr/bin/python3 # Debian's python3-torch
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
go build -o "$out/faster" ./cmd/faster
NICE=(nice -n -10)
"${NICE[@]}" true 2>/dev/null || NICE=()
limit=$((BATCH * STEPS))
common=(--data "$DATA" --epochs 1 --batch "$BATCH" --lr "$LR" --limit "$limit" --test-limit "$BATCH" --filters "$FILTERS")
echo "ThinNet $FILTERS, Fashion-MNIST, batch $BATCH, $STEPS steps per run, $ROUNDS rounds, lr $LR, momentum 0.9; $(nproc) CPUs; load at start: $(cut -d' ' -f1-3 /proc/loadavg)" >&2
# shellcheck disable=SC2086
ours() { "${NICE[@]}" /usr/bin/time -f '%M %U %S' -o "$out/ours.$1.$2.time" "$out/faster" train "${common[@]}" --threads "$1" $OURS_FLAGS --json >"$out/ours.$1.$2.json"; }
peer() { OMP_NUM_THREADS=$1 "${NICE[@]}" /usr/bin/time -f '%M %U %S' -o "$out/torch.$1.$2.time" $PY bench/peer_thinnet_torch.py "${common[@]}" --threads "$1" >"$out/torch.$1.$2.json"; }
for t in $THREADS_LIST; do
  for r in $(seq 1 "$ROUNDS"); do
    if [ $((r % 2)) -eq 1 ]; then ours "$t" "$r"; peer "$t" "$r"; else peer "$t" "$r"; ours "$t" "$r"; fi
  done
done
echo "load at end: $(cut -d' ' -f1-3 /proc/loadavg)" >&2
$PY - "$out" "$ROUNDS" "$BATCH" $THREADS_LIST <<'PY'
import json, statistics, sys
d, rounds, batch, threads = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4:]
def run(kind, t, r):
    j = json.load(open("%s/%s.%s.%d.json" % (d, kind, t, r)))
    rss, user, sys_ = open("%s/%s.%s.%d.time" % (d, kind, t, r)).read().split()[-3:]
    steps = j["images"] / batch
    return {"ms": 1e3 * j["seconds"] / steps, "cpu": 1e3 * j.get("cpu_seconds", 0) / steps, "rss": int(rss) / 1024,
            "loss": j["per_epoch"][0]["train_loss"], "backend": j["backend"]}
print("%-7s %12s %14s %22s %9s %9s %9s %11s %12s %10s %10s" % ("threads", "ours ms/step", "torch ms/step", "ratio median [min-max]",
      "ours CPU", "torch CPU", "CPU ratio", "ours RSS", "torch RSS", "ours loss", "torch loss"))
for t in threads:
    o = [run("ours", t, r) for r in range(1, rounds + 1)]
    p = [run("torch", t, r) for r in range(1, rounds + 1)]
    ratios = [b["ms"] / a["ms"] for a, b in zip(o, p)]
    med = lambda xs: statistics.median(xs)
    oc, pc = med([x["cpu"] for x in o]), med([x["cpu"] for x in p])
    print("%-7s %12.0f %14.0f %10.2fx [%.2f-%.2f] %9.0f %9.0f %8.2fx %7.0f MiB %8.0f MiB %10.4f %10.4f" % (
        t, med([x["ms"] for x in o]), med([x["ms"] for x in p]), med(ratios), min(ratios), max(ratios), oc, pc, pc / max(oc, 1e-9),
        max(x["rss"] for x in o), max(x["rss"] for x in p), med([x["loss"] for x in o]), med([x["loss"] for x in p])))
print("ours: %s, peer: %s; ratio = torch ms/step / ours ms/step, per round; CPU: ms of process CPU time (all threads) per step" % (
    o[0]["backend"], p[0]["backend"]))
PY
