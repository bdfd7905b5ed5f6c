#!/usr/bin/env bash
# The README's "Training" table (the study's "Model Running" baseline):
# ThinNet on the full Fashion-MNIST training set, one epoch, batch 512,
# SGD lr 0.001, momentum 0.9, one thread each, `faster train` on CPU 0 and
# PyTorch (bench/peer_thinnet_torch.py) on CPU 1 at the same time
# (taskset), for seeds 1 and 2; test accuracy on the 10,000 test images.
#
#   bench/run_seed_table.sh [DATA]
#   env: SEEDS ("1 2"), LIMIT (0 = all 60,000), EPOCHS (1), CPUS ("0 1":
#        ours, PyTorch)
set -euo pipefail
cd "$(dirname "$0")/.."
DATA=${1:-/usr/share/datasets/fashion-mnist}
SEEDS=${SEEDS:-1 2}
LIMIT=${LIMIT:-0}
EPOCHS=${EPOCHS:-1}
read -r CPU_OURS CPU_PEER <<<"${CPUS:-0 1}"
PY=/usr/bin/python3
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
go build -o bin/faster ./cmd/faster
common=(--data "$DATA" --epochs "$EPOCHS" --batch 512 --lr 0.001 --momentum 0.9 --threads 1 --limit "$LIMIT")
echo "seed table: ThinNet, batch 512, lr 0.001, one thread each, ours on CPU $CPU_OURS, PyTorch on CPU $CPU_PEER, limit $LIMIT; load: $(cut -d' ' -f1-3 /proc/loadavg)" >&2
for s in $SEEDS; do
  taskset -c "$CPU_OURS" bin/faster train "${common[@]}" --seed "$s" --json >"$out/ours.$s.json" &
  o=$!
  OMP_NUM_THREADS=1 taskset -c "$CPU_PEER" $PY bench/peer_thinnet_torch.py "${common[@]}" --seed "$s" >"$out/torch.$s.json" &
  p=$!
  wait $o $p
done
$PY - "$out" $SEEDS <<'PY'
import json, sys
d, seeds = sys.argv[1], sys.argv[2:]
print("| engine | seed | images/s | test accuracy | seconds |")
print("|---|---|---|---|---|")
tot = {"ours": [0, 0, []], "torch": [0, 0, []]}
for s in seeds:
    for k, name in (("ours", None), ("torch", None)):
        r = json.load(open("%s/%s.%s.json" % (d, k, s)))
        label = "`faster train` (%s)" % r["backend"] if k == "ours" else r["backend"]
        print("| %s | %s | %.1f | %.2f%% | %.0f |" % (label, s, r["images"] / r["seconds"], 100 * r["test_accuracy"], r["seconds"]))
        t = tot[k]; t[0] += r["images"]; t[1] += r["seconds"]; t[2].append(r["test_accuracy"])
o, p = (tot[k][0] / tot[k][1] for k in ("ours", "torch"))
mean = lambda xs: 100 * sum(xs) / len(xs)
print("| all seeds: faster / PyTorch | | %.1f / %.1f = %.2f× | %.2f%% / %.2f%% | |" % (o, p, o / p, mean(tot["ours"][2]), mean(tot["torch"][2])))
PY
