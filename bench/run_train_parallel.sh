#!/usr/bin/env bash
# The seed's speed-ups on this machine, ours beside PyTorch's in the same
# run: single device, DDP over 2 processes (gloo for both), and bf16 AMP,
# ThinNet on Fashion-MNIST, the same threads in all, pairs alternated.
#
#   bench/run_train_parallel.sh [DATA]
#   env: THREADS (default: nproc), BATCH (64), LR (0.01), LIMIT (8192),
#        TEST_LIMIT (2000), AMP_LIMIT (512: PyTorch's bf16 autocast runs at a
#        few images/s on a CPU without bf16 instructions), ROUNDS (1)
set -euo pipefail
cd "$(dirname "$0")/.."
DATA=${1:-/usr/share/datasets/fashion-mnist}
THREADS=${THREADS:-$(nproc)}
BATCH=${BATCH:-64}
LR=${LR:-0.01}
LIMIT=${LIMIT:-8192}
TEST_LIMIT=${TEST_LIMIT:-2000}
ROUNDS=${ROUNDS:-1}
AMP_LIMIT=${AMP_LIMIT:-512}
PY=/usr/bin/python3 # Debian's python3-torch
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
go build -o bin/faster ./cmd/faster
common=(--data "$DATA" --batch "$BATCH" --lr "$LR" --limit "$LIMIT" --test-limit "$TEST_LIMIT")
half=$((THREADS / 2 > 0 ? THREADS / 2 : 1))
ours() { # name, args...
  local n=$1; shift
  bin/faster train "${common[@]}" "$@" --json >"$out/ours.$n.$r.json"
}
peer() {
  local n=$1; shift
  $PY bench/peer_thinnet_torch.py "${common[@]}" --threads "$THREADS" "$@" >"$out/torch.$n.$r.json"
}
echo "ThinNet, Fashion-MNIST, batch $BATCH, lr $LR, $LIMIT images, $THREADS threads in all; load: $(cut -d' ' -f1-3 /proc/loadavg)" >&2
for r in $(seq 1 "$ROUNDS"); do
  ours single --threads "$THREADS"; peer single
  peer ddp --ddp 2; ours ddp --threads "$half" --strategy ddp --nproc 2
  ours amp --threads "$THREADS" --amp --limit "$AMP_LIMIT"; peer amp --amp --limit "$AMP_LIMIT"
done
$PY - "$out" "$ROUNDS" "$AMP_LIMIT" <<'PY'
import json, sys
d, rounds = sys.argv[1], int(sys.argv[2])
def load(kind, name):
    runs = [json.load(open("%s/%s.%s.%d.json" % (d, kind, name, r))) for r in range(1, rounds + 1)]
    return sum(r["images"] for r in runs) / sum(r["seconds"] for r in runs), runs[-1]["test_accuracy"]
print("| run | faster images/s | PyTorch images/s | faster / PyTorch | accuracy faster / PyTorch |")
print("|---|---|---|---|---|")
base = {}
for name in ("single", "ddp", "amp"):
    o, oa = load("ours", name)
    p, pa = load("torch", name)
    base.setdefault("o", o); base.setdefault("p", p)
    print("| %s | %.1f (%.2f× single) | %.1f (%.2f× single) | %.2f× | %.2f%% / %.2f%% |" % (
        name, o, o / base["o"], p, p / base["p"], o / p, 100 * oa, 100 * pa))
print("(amp: on %s images)" % sys.argv[3])
PY
