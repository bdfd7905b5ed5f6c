#!/usr/bin/env bash
# What mixed precision gains on this CPU: ThinNet on Fashion-MNIST at batch
# 512, the training step in fp32 (Winograd, the default, and direct
# convolutions) against bf16 AMP (`--amp`: oneDNN's native bf16 kernels
# where the CPU has AVX512_BF16 or AMX, else rounding to bf16 on fp32
# kernels), beside PyTorch's fp32 and its bf16 autocast (bench/peer_thinnet_torch.py --amp)
# in the same rounds.
#
# The figure is the steady step: each cell runs STEPS steps and 1 step from
# the same seed, and (CPU of the long run - CPU of the short one) /
# (STEPS - 1) cancels start-up and the first step's primitive creation. CPU
# time (the process's, all threads, over the training clock: cpu_seconds in
# both summaries) is steadier than wall time on a shared machine. The cells
# take turns in every round, the order reversed every other round; the
# table gives each cell's median and each ratio's median with its spread
# over the rounds (a spread that holds 1.0 is marked ≈).
#
#   bench/run_amp.sh [DATA]
#   env: THREADS (1), BATCH (512), STEPS (6), ROUNDS (3), FILTERS (32,64,128)
set -euo pipefail
cd "$(dirname "$0")/.."
DATA=${1:-/usr/share/datasets/fashion-mnist}
THREADS=${THREADS:-1}
BATCH=${BATCH:-512}
STEPS=${STEPS:-6}
ROUNDS=${ROUNDS:-3}
FILTERS=${FILTERS:-32,64,128}
PY=/usr/bin/python3 # Debian's python3-torch
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
go build -o "$out/faster" ./cmd/faster
NICE=(nice -n -10)
"${NICE[@]}" true 2>/dev/null || NICE=()
common=(--data "$DATA" --epochs 1 --batch "$BATCH" --lr 0.001 --test-limit "$BATCH" --filters "$FILTERS" --threads "$THREADS" --seed 1)
cells=(fp32-winograd fp32-direct amp torch-fp32 torch-amp)
run() { # cell steps round
  local cell=$1 steps=$2 r=$3 lim=$(($2 * BATCH))
  local o="$out/$cell.$steps.$r.json"
  case $cell in
  fp32-winograd) "${NICE[@]}" "$out/faster" train "${common[@]}" --limit "$lim" --json >"$o" ;;
  fp32-direct) "${NICE[@]}" "$out/faster" train "${common[@]}" --limit "$lim" --winograd=false --json >"$o" ;;
  amp) "${NICE[@]}" "$out/faster" train "${common[@]}" --limit "$lim" --amp --json >"$o" ;;
  torch-fp32) OMP_NUM_THREADS=$THREADS "${NICE[@]}" $PY bench/peer_thinnet_torch.py "${common[@]}" --limit "$lim" >"$o" ;;
  torch-amp) OMP_NUM_THREADS=$THREADS "${NICE[@]}" $PY bench/peer_thinnet_torch.py "${common[@]}" --limit "$lim" --amp >"$o" ;;
  esac
}
echo "ThinNet $FILTERS, Fashion-MNIST, batch $BATCH, $THREADS thread(s), $STEPS-step and 1-step runs, $ROUNDS rounds; $(nproc) CPUs; $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2-); bf16 in the CPU flags: $(grep -qw avx512_bf16 /proc/cpuinfo && echo yes || echo no); load at start: $(cut -d' ' -f1-3 /proc/loadavg)" >&2
for r in $(seq 1 "$ROUNDS"); do
  order=("${cells[@]}")
  if [ $((r % 2)) -eq 0 ]; then order=($(printf '%s\n' "${cells[@]}" | tac)); fi
  for c in "${order[@]}"; do
    run "$c" "$STEPS" "$r"
    run "$c" 1 "$r"
  done
  echo "round $r done; load $(cut -d' ' -f1-3 /proc/loadavg)" >&2
done
$PY - "$out" "$ROUNDS" "$STEPS" "${cells[@]}" <<'PY'
import json, statistics, sys
d, rounds, steps, cells = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4:]
def load(c, n, r):
    return json.load(open("%s/%s.%d.%d.json" % (d, c, n, r)))
def steady(c, r, key):
    a, b = load(c, steps, r), load(c, 1, r)
    return (a[key] - b[key]) / (steps - 1)
med = statistics.median
rows = {}
for c in cells:
    cpu = [steady(c, r, "cpu_seconds") for r in range(1, rounds + 1)]
    wall = [steady(c, r, "seconds") for r in range(1, rounds + 1)]
    j = load(c, steps, 1)
    rows[c] = {"cpu": cpu, "wall": wall, "loss": j["per_epoch"][0]["train_loss"],
               "precision": j.get("precision", "bf16" if j.get("amp") else "fp32"), "native": j.get("native_precision", False)}
def ratio(base, c):
    rs = [a / b for a, b in zip(rows[base]["cpu"], rows[c]["cpu"])]
    m = med(rs)
    mark = "≈" if min(rs) <= 1.0 <= max(rs) else ""
    return "%s%.2f× [%.2f–%.2f]" % (mark, m, min(rs), max(rs))
print("| cell | precision | CPU s/step, median [min–max] | wall s/step | vs ours fp32 Winograd | vs PyTorch fp32 | mean train loss, %d steps |" % steps)
print("|---|---|---|---|---|---|---|")
for c in cells:
    x = rows[c]
    prec = x["precision"] + (" native" if x["native"] else (" rounded" if c == "amp" else ""))
    print("| %s | %s | %.3f [%.3f–%.3f] | %.3f | %s | %s | %.5f |" % (
        c, prec, med(x["cpu"]), min(x["cpu"]), max(x["cpu"]), med(x["wall"]),
        ratio("fp32-winograd", c), ratio("torch-fp32", c), x["loss"]))
print()
print("AMP against fp32 (ours): vs Winograd %s, vs direct %s; PyTorch's autocast against its fp32: %s; ours AMP against PyTorch's autocast: %s" % (
    ratio("fp32-winograd", "amp"), ratio("fp32-direct", "amp"), ratio("torch-fp32", "torch-amp"), ratio("torch-amp", "amp")))
print("ratio = the first cell's steady CPU per step / the second's, per round: above 1, the second is faster")
PY
