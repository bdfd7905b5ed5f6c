#!/usr/bin/env bash
# Does --winograd keep the training curves? The fast recipe of
# bench/run_time_to_accuracy.sh (ThinNet 8/16/32, batch 128, one-cycle peak
# 0.2 over 2 epochs, evaluation every 94 steps) for each seed in SEEDS,
# three ways:
#   direct    --winograd=false: direct convolutions, 1 thread
#   winograd  --winograd (faster train's default), 1 thread
#   direct2   --winograd=false, 2 threads: the control. The same
#             arithmetic as `direct` with another summation order (oneDNN
#             splits reductions by thread), so its distance from `direct`
#             is what rounding alone does to a curve over ~940 steps.
# direct and winograd run side by side on CPUs 0 and 1 (swapped each seed),
# direct2 on both after them. Accuracy does not depend on timing, so the
# machine's load changes the seconds, not the figures.
#
# Prints every run's test accuracy at each evaluation, the final accuracy
# per seed and way, and their mean and spread; writes the JSON of every
# run to $OUT.
#
#   bench/run_winograd_curves.sh [DATA]
#   env: SEEDS ("1 2 3 4"), EPOCHS (2), OUT (/tmp/faster-winograd);
#        the model and recipe: FILTERS (8,16,32), BATCH (128), LR (0.2),
#        RECIPE (fast; empty: plain SGD with momentum 0.9 at a constant
#        LR), EVAL_EVERY (94). The full-width step of the README's step
#        table: FILTERS=32,64,128 BATCH=512 LR=0.001 RECIPE= EPOCHS=1
#        EVAL_EVERY=13
set -euo pipefail
cd "$(dirname "$0")/.."
DATA=${1:-/usr/share/datasets/fashion-mnist}
SEEDS=${SEEDS:-1 2 3 4}
EPOCHS=${EPOCHS:-2}
OUT=${OUT:-/tmp/faster-winograd}
FILTERS=${FILTERS:-8,16,32}
BATCH=${BATCH:-128}
LR=${LR:-0.2}
RECIPE=${RECIPE-fast}
EVAL_EVERY=${EVAL_EVERY:-94}
recipe=()
[ -n "$RECIPE" ] && recipe=(--recipe "$RECIPE")
mkdir -p "$OUT"
go build -o bin/faster ./cmd/faster
run() { # name seed cpus threads extra...
  local n=$1 s=$2 c=$3 t=$4; shift 4
  taskset -c "$c" bin/faster train --data "$DATA" "${recipe[@]}" --lr "$LR" --epochs "$EPOCHS" --batch "$BATCH" \
    --filters "$FILTERS" --eval-every "$EVAL_EVERY" --threads "$t" --seed "$s" "$@" --json >"$OUT/$n.$s.json"
}
echo "winograd vs direct curves: ThinNet $FILTERS, batch $BATCH, lr $LR, recipe ${RECIPE:-none}, seeds $SEEDS, $EPOCHS epochs, evaluation every $EVAL_EVERY steps; load: $(cut -d' ' -f1-3 /proc/loadavg)" >&2
i=0
for s in $SEEDS; do
  a=0 b=1
  [ $((i % 2)) -eq 1 ] && a=1 b=0
  run direct "$s" $a 1 --winograd=false & p1=$!
  run winograd "$s" $b 1 --winograd & p2=$!
  wait $p1; wait $p2
  run direct2 "$s" 0-1 2 --winograd=false
  echo "seed $s done; load: $(cut -d' ' -f1-3 /proc/loadavg)" >&2
  i=$((i + 1))
done
python3 - "$OUT" "$EVAL_EVERY" $SEEDS <<'EOF'
import json, statistics, sys
out, every, seeds = sys.argv[1], sys.argv[2], sys.argv[3:]
ways = ["direct", "winograd", "direct2"]
runs = {(w, s): json.load(open(f"{out}/{w}.{s}.json")) for w in ways for s in seeds}
def acc(d): return [c["test_accuracy"] for c in d["curve"]]
print(f"| seed | way | test accuracy at each evaluation (every {every} steps), % | final |")
print("|---|---|---|---|")
for s in seeds:
    for w in ways:
        a = acc(runs[w, s])
        print(f"| {s} | {w} | {' '.join(f'{100*x:.1f}' for x in a)} | {100*runs[w, s]['test_accuracy']:.2f}% |")
print()
print("| way | final accuracy, mean ± sd over seeds | mean abs. gap to direct, same seed, over all evaluations (points) |")
print("|---|---|---|")
for w in ways:
    f = [100 * runs[w, s]["test_accuracy"] for s in seeds]
    sd = statistics.stdev(f) if len(f) > 1 else 0.0
    gaps = [abs(x - y) * 100 for s in seeds for x, y in zip(acc(runs[w, s]), acc(runs["direct", s]))]
    print(f"| {w} | {statistics.mean(f):.2f} ± {sd:.2f}% | {statistics.mean(gaps):.2f} |")
EOF
