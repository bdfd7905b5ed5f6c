#!/usr/bin/env bash
# Trains the seed's ThinNet on Fashion-MNIST with `faster train` (Go engine
# on oneDNN) and with PyTorch on the CPU (bench/peer_thinnet_torch.py), in
# the same run, same threads, batch, learning rate and momentum, and prints
# images/s, test accuracy and the ratio.
#
#   bench/run_train.sh [DATA]
#   env: THREADS (default: nproc), EPOCHS (1), BATCH (512), LR (0.001),
#        LIMIT (training images; default 0 = the full 60,000),
#        TEST_LIMIT (0 = all 10,000), NORM_THREADS (ours: BatchNorm threads,
#        0 = THREADS; 1 helps on busy cores), ROUNDS (1: ours then PyTorch; 2 adds
#        PyTorch then ours, to spread the noise of a shared machine)
set -euo pipefail
cd "$(dirname "$0")/.."
DATA=${1:-/usr/share/datasets/fashion-mnist}
THREADS=${THREADS:-$(nproc)}
EPOCHS=${EPOCHS:-1}
BATCH=${BATCH:-512}
LR=${LR:-0.001}
LIMIT=${LIMIT:-0}
TEST_LIMIT=${TEST_LIMIT:-0}
ROUNDS=${ROUNDS:-1}
NORM_THREADS=${NORM_THREADS:-0}
PY=/usr/bin/python3 # Debian's python3-torch
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
go build -o bin/faster ./cmd/faster
common=(--data "$DATA" --epochs "$EPOCHS" --batch "$BATCH" --lr "$LR" --threads "$THREADS" --limit "$LIMIT" --test-limit "$TEST_LIMIT")
ours() { bin/faster train "${common[@]}" --norm-threads "$NORM_THREADS" --json >"$out/ours.$1.json"; }
peer() { OMP_NUM_THREADS=$THREADS $PY bench/peer_thinnet_torch.py "${common[@]}" >"$out/torch.$1.json"; }
echo "ThinNet, Fashion-MNIST, batch $BATCH, lr $LR, momentum 0.9, $THREADS threads (BatchNorm: ${NORM_THREADS/#0/same}), epochs $EPOCHS, limit $LIMIT; load: $(cut -d' ' -f1-3 /proc/loadavg)" >&2
for r in $(seq 1 "$ROUNDS"); do
  if [ $((r % 2)) -eq 1 ]; then ours "$r"; peer "$r"; else peer "$r"; ours "$r"; fi
done
$PY - "$out" "$ROUNDS" <<'PY'
import json, sys
d, rounds = sys.argv[1], int(sys.argv[2])
def load(kind):
    runs = [json.load(open("%s/%s.%d.json" % (d, kind, r))) for r in range(1, rounds + 1)]
    ips = sum(r["images"] for r in runs) / sum(r["seconds"] for r in runs)
    return ips, runs[-1]["test_accuracy"], runs[-1]["backend"], sum(r["seconds"] for r in runs)
o, t = load("ours"), load("torch")
print("%-22s %12s %14s %10s" % ("engine", "images/s", "test accuracy", "seconds"))
print("%-22s %12.1f %13.2f%% %10.1f" % ("faster (" + o[2] + ")", o[0], 100 * o[1], o[3]))
print("%-22s %12.1f %13.2f%% %10.1f" % (t[2], t[0], 100 * t[1], t[3]))
print("ratio faster/pytorch: %.2fx images/s" % (o[0] / t[0]))
PY
