#!/usr/bin/env bash
# The focused A/B figures of the README's "Training speed-ups" section:
# the same build, each pair alternated ROUNDS times on the same cores, so
# a shared machine's noise falls on both sides.
#
#   bench/run_ab.sh [DATA]
#   env: ROUNDS (2), THREADS (2), LIMIT (8192: DDP and overlap pairs),
#        EPOCH_LIMIT (4096: autotune and AMP pairs, timed on their second
#        epoch, once tuning and first-touch costs are paid)
#
# Rows:
#   ddp      DDP 2 processes × THREADS/2 vs one process × THREADS (images/s),
#            and DDP with --sync-bn
#   autotune second-epoch seconds with --autotune vs without, and the
#            seconds tuning took (once per layer shape)
#   amp      second-epoch seconds with --amp (bf16) vs fp32
#   overlap  the narrow ThinNet of make demo (widths 8/16/32): defaults vs
#            --no-overlap and vs --zero-grad
set -euo pipefail
cd "$(dirname "$0")/.."
DATA=${1:-/usr/share/datasets/fashion-mnist}
ROUNDS=${ROUNDS:-2}
THREADS=${THREADS:-2}
LIMIT=${LIMIT:-8192}
EPOCH_LIMIT=${EPOCH_LIMIT:-4096}
PY=/usr/bin/python3
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
go build -o bin/faster ./cmd/faster
half=$((THREADS / 2 > 0 ? THREADS / 2 : 1))
run() { # name, args...
  local n=$1; shift
  bin/faster train --data "$DATA" --batch 64 --lr 0.01 --test-limit 1000 "$@" --json >"$out/$n.$r.json"
}
echo "focused A/B, ThinNet on Fashion-MNIST, batch 64, $THREADS threads in all, $ROUNDS rounds; load: $(cut -d' ' -f1-3 /proc/loadavg)" >&2
for r in $(seq 1 "$ROUNDS"); do
  pair=(single ddp syncbn)
  [ $((r % 2)) -eq 0 ] && pair=(syncbn ddp single)
  for v in "${pair[@]}"; do
    case $v in
    single) run single --limit "$LIMIT" --threads "$THREADS" ;;
    ddp) run ddp --limit "$LIMIT" --threads "$half" --strategy ddp --nproc 2 ;;
    syncbn) run syncbn --limit "$LIMIT" --threads "$half" --strategy ddp --nproc 2 --sync-bn ;;
    esac
  done
  for v in plain autotune amp; do
    case $v in
    plain) run plain2 --limit "$EPOCH_LIMIT" --epochs 2 --threads "$THREADS" ;;
    autotune) run autotune2 --limit "$EPOCH_LIMIT" --epochs 2 --threads "$THREADS" --autotune ;;
    amp) run amp2 --limit "$EPOCH_LIMIT" --epochs 2 --threads "$THREADS" --amp ;;
    esac
  done
  for v in base nooverlap zerograd; do
    case $v in
    base) run base --limit "$LIMIT" --threads "$THREADS" --filters 8,16,32 ;;
    nooverlap) run nooverlap --limit "$LIMIT" --threads "$THREADS" --filters 8,16,32 --no-overlap ;;
    zerograd) run zerograd --limit "$LIMIT" --threads "$THREADS" --filters 8,16,32 --zero-grad ;;
    esac
  done
done
$PY - "$out" "$ROUNDS" "$THREADS" <<'PY'
import json, sys
d, rounds = sys.argv[1], int(sys.argv[2])
def runs(n):
    return [json.load(open("%s/%s.%d.json" % (d, n, r))) for r in range(1, rounds + 1)]
def ips(n):
    rs = runs(n)
    return sum(r["images"] for r in rs) / sum(r["seconds"] for r in rs)
def second(n):
    return [r["per_epoch"][1]["seconds"] for r in runs(n)]
def secs(n):
    return [r["seconds"] for r in runs(n)]
fmt = lambda xs: " and ".join("%.1f" % x for x in xs)
s, p, sb = ips("single"), ips("ddp"), ips("syncbn")
print("- DDP, 2 processes, vs one process with %s threads: %.0f vs %.0f images/s, **%.2f×**; with --sync-bn %.2f×" % (
    sys.argv[3], p, s, p / s, sb / s))
a, b = second("autotune2"), second("plain2")
tuned = [sum(c.get("seconds", 0) for c in r.get("autotune") or []) for r in runs("autotune2")]
print("- --autotune, second epoch: %s s vs %s s, **%.2f×** (tuning: %s s once)" % (fmt(a), fmt(b), sum(b) / sum(a), fmt(tuned)))
a = second("amp2")
print("- --amp (bf16), second epoch: %s s vs %s s fp32 (%.2f×)" % (fmt(a), fmt(b), sum(b) / sum(a)))
base, no, zg = secs("base"), secs("nooverlap"), secs("zerograd")
print("- narrow ThinNet (8/16/32): defaults %s s, --no-overlap %s s (%.2f×), --zero-grad %s s (%.2f×)" % (
    fmt(base), fmt(no), sum(no) / sum(base), fmt(zg), sum(zg) / sum(base)))
PY
