#!/usr/bin/env bash
# The best time to a target accuracy that any of our configurations
# reaches, beside the PyTorch peer in the same run: `faster bench train
# --target-accuracy` with one model, recipe and hyper-parameters for all,
# first ours (1 process × THREADS threads, Winograd, its default) and the
# peer (1 process × THREADS threads) for ROUNDS rounds alternating, then
# ours alone (--no-peer) in each other configuration, each for
# CONFIG_ROUNDS rounds:
#
#   direct   1 process × THREADS threads, direct convolutions (--winograd=false)
#   1thread  1 process × 1 thread (the other cores idle)
#   ddp      THREADS DDP processes × 1 thread (--ours-ddp; BatchNorm
#            statistics per rank, as torch DDP without SyncBN)
#
# It prints one row per configuration: the median seconds to the target
# over the rounds (training only; evaluation outside the clock on both
# sides), steps, best accuracy, images/s, and the peer's median over it.
#
#   bench/run_tta_configs.sh [DATA]
#   env: TARGET (0.82), EVAL_EVERY (94), EPOCHS (2), BATCH (128), LR (0.2),
#        FILTERS (8,16,32), THREADS (2), CPUS (0-1), SEED (1), ROUNDS (2),
#        CONFIG_ROUNDS (ROUNDS), CONFIGS ("direct 1thread ddp"), OUT (/tmp/faster-tta-configs)
set -euo pipefail
cd "$(dirname "$0")/.."
DATA=${1:-/usr/share/datasets/fashion-mnist}
TARGET=${TARGET:-0.82}
EVAL_EVERY=${EVAL_EVERY:-94}
EPOCHS=${EPOCHS:-2}
BATCH=${BATCH:-128}
LR=${LR:-0.2}
FILTERS=${FILTERS:-8,16,32}
THREADS=${THREADS:-2}
CPUS=${CPUS:-0-1}
SEED=${SEED:-1}
ROUNDS=${ROUNDS:-2}
CONFIG_ROUNDS=${CONFIG_ROUNDS:-$ROUNDS}
CONFIGS=${CONFIGS:-direct 1thread ddp}
OUT=${OUT:-/tmp/faster-tta-configs}
mkdir -p "$OUT"
go build -o bin/faster ./cmd/faster
common=(--data "$DATA" --target-accuracy "$TARGET" --eval-every "$EVAL_EVERY" --recipe fast --lr "$LR"
  --epochs "$EPOCHS" --batch "$BATCH" --filters "$FILTERS" --seed "$SEED" --json)
echo "time to accuracy by configuration: target $TARGET, ThinNet $FILTERS, batch $BATCH, lr $LR, $EPOCHS epochs, seed $SEED, $ROUNDS rounds beside the peer and $CONFIG_ROUNDS per other configuration, CPUs $CPUS; load: $(cut -d' ' -f1-3 /proc/loadavg)" >&2
run() { # name, extra flags...
  local name=$1
  shift
  echo "$name: $*; load: $(cut -d' ' -f1-3 /proc/loadavg)" >&2
  taskset -c "$CPUS" bin/faster bench train "${common[@]}" "$@" >"$OUT/$name.json"
}
run peer --rounds "$ROUNDS" --threads "$THREADS" --curve "$OUT/peer.curve.json" --plot "$OUT/peer.png"
for c in $CONFIGS; do
  case $c in
  direct) run direct --rounds "$CONFIG_ROUNDS" --threads "$THREADS" --winograd=false --no-peer ;;
  1thread) run 1thread --rounds "$CONFIG_ROUNDS" --threads 1 --no-peer ;;
  ddp) run ddp --rounds "$CONFIG_ROUNDS" --threads "$THREADS" --ours-ddp "$THREADS" --no-peer ;;
  *) echo "unknown configuration $c" >&2; exit 2 ;;
  esac
done
echo "load at end: $(cut -d' ' -f1-3 /proc/loadavg)" >&2
/usr/bin/python3 - "$OUT" "$THREADS" $CONFIGS <<'PY'
import json, statistics, sys
out, threads, configs = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
first = json.load(open("%s/peer.json" % out))
print("target %.1f%%, %s, batch %d, %d epochs, recipe %s; seconds: median of the rounds (training only)" % (
    100 * first["target_accuracy"], "ThinNet " + "/".join(map(str, first.get("filters") or [])), first["batch"], first["epochs"], first.get("recipe", "")))
def rows(name, engine):
    runs = [r for r in json.load(open("%s/%s.json" % (out, name)))["runs"] if r["engine"] == engine and r["variant"] == "recipe"]
    return runs
def med(runs, key):
    xs = [r[key] for r in runs if r[key] is not None]
    return statistics.median(xs) if len(xs) == len(runs) and xs else None
peer = rows("peer", "pytorch")
peer_s = med(peer, "seconds_to_target")
table = [("PyTorch 1.13, 1 process x %d threads" % threads, peer)]
table.append(("faster, 1 process x %d threads, Winograd" % threads, rows("peer", "faster")))
names = {"direct": "faster, 1 process x %d threads, direct" % threads, "1thread": "faster, 1 process x 1 thread, Winograd",
         "ddp": "faster, %d DDP processes x 1 thread, Winograd" % threads}
for c in configs:
    table.append((names[c], rows(c, "faster")))
print("%-46s %18s %7s %9s %10s %14s" % ("configuration", "s to target", "steps", "best acc", "images/s", "PyTorch s / s"))
for name, runs in table:
    s = med(runs, "seconds_to_target")
    secs = " ".join("%.1f" % r["seconds_to_target"] if r["seconds_to_target"] is not None else "-" for r in runs)
    steps = "/".join(str(r.get("steps_to_target", "-")) for r in runs)
    ratio = "%.2fx" % (peer_s / s) if s and peer_s else "-"
    print("%-46s %18s %7s %8.2f%% %10.0f %14s" % (name, ("%.1f [%s]" % (s, secs)) if s else "not reached [%s]" % secs, steps,
          100 * max(r["best_accuracy"] for r in runs), statistics.median(r["images_per_sec"] for r in runs), ratio))
PY
