#!/usr/bin/env bash
# The best time to a target accuracy that any of our configurations
# reaches, beside the PyTorch peer in the same run. Every run is
# bench/run_time_to_accuracy.sh with one model, recipe and hyper-parameters
# for all (its env: TARGET, EVAL_EVERY, EPOCHS, BATCH, LR, FILTERS, THREADS,
# CPUS, SEED): first ours in its default configuration (1 process × THREADS
# threads, Winograd) and the peer (1 process × THREADS threads) for ROUNDS
# rounds alternating, then ours alone (NO_PEER=1) in each configuration of
# CONFIGS, each for CONFIG_ROUNDS rounds:
#
#   direct   1 process × THREADS threads, direct convolutions (WINOGRAD=0)
#   1thread  1 process × 1 thread (the other cores idle)
#   ddp      THREADS DDP processes × 1 thread (OURS_DDP; BatchNorm
#            statistics per rank, as torch DDP without SyncBN)
#
# It prints one row per configuration: the median seconds to the target
# over the rounds (training only; evaluation outside the clock on both
# sides), steps, best accuracy, images/s, and the peer's median over it.
#
#   bench/run_tta_configs.sh [DATA]
#   env: those of bench/run_time_to_accuracy.sh (its defaults: the narrow
#        ThinNet, target 82%), ROUNDS (2), CONFIG_ROUNDS (ROUNDS),
#        CONFIGS ("direct 1thread ddp"), OUT (/tmp/faster-tta-configs:
#        one directory per configuration, each with tta.json and tta.png)
set -euo pipefail
cd "$(dirname "$0")/.."
THREADS=${THREADS:-2}
ROUNDS=${ROUNDS:-2}
CONFIG_ROUNDS=${CONFIG_ROUNDS:-$ROUNDS}
CONFIGS=${CONFIGS:-direct 1thread ddp}
OUT=${OUT:-/tmp/faster-tta-configs}
for c in $CONFIGS; do
  case $c in direct | 1thread | ddp) ;; *) echo "CONFIGS: unknown configuration $c (want direct, 1thread, ddp)" >&2; exit 2 ;; esac
done
unset NO_PEER WINOGRAD OURS_DDP ABLATION # each configuration below sets its own
export THREADS
DATA_ARG=("$@")
run() { # name, env assignments of bench/run_time_to_accuracy.sh...
  local name=$1
  shift
  echo "$name: $*; load: $(cut -d' ' -f1-3 /proc/loadavg)" >&2
  env OUT="$OUT/$name" "$@" bench/run_time_to_accuracy.sh "${DATA_ARG[@]}" >&2
}
run default ROUNDS="$ROUNDS"
for c in $CONFIGS; do
  case $c in
  direct) run direct ROUNDS="$CONFIG_ROUNDS" NO_PEER=1 WINOGRAD=0 ;;
  1thread) run 1thread ROUNDS="$CONFIG_ROUNDS" NO_PEER=1 THREADS=1 ;;
  ddp) run ddp ROUNDS="$CONFIG_ROUNDS" NO_PEER=1 OURS_DDP="$THREADS" ;;
  esac
done
echo "load at end: $(cut -d' ' -f1-3 /proc/loadavg)" >&2
/usr/bin/python3 - "$OUT" "$THREADS" $CONFIGS <<'PY'
import json, statistics, sys
out, threads, configs = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
summary = {c: json.load(open("%s/%s/tta.json" % (out, c))) for c in ["default"] + configs}
first = summary["default"]
print("target %.1f%%, %s, batch %d, %d epochs, recipe %s; seconds: median of the rounds (training only)" % (
    100 * first["target_accuracy"], "ThinNet " + "/".join(map(str, first.get("filters") or [])), first["batch"], first["epochs"], first.get("recipe", "")))
def rows(name, engine):
    return [r for r in summary[name]["runs"] if r["engine"] == engine and r["variant"] == "recipe"]
def med(runs, key):
    xs = [r[key] for r in runs if r[key] is not None]
    return statistics.median(xs) if len(xs) == len(runs) and xs else None
peer = rows("default", "pytorch")
peer_s = med(peer, "seconds_to_target")
names = {"direct": "faster, 1 process x %d threads, direct" % threads, "1thread": "faster, 1 process x 1 thread, Winograd",
         "ddp": "faster, %d DDP processes x 1 thread, Winograd" % threads}
table = [("PyTorch 1.13, 1 process x %d threads" % threads, peer), ("faster, 1 process x %d threads, Winograd" % threads, rows("default", "faster"))]
table += [(names[c], rows(c, "faster")) for c in configs]
print("%-46s %18s %7s %9s %10s %14s" % ("configuration", "s to target", "steps", "best acc", "images/s", "PyTorch s / s"))
for name, runs in table:
    s = med(runs, "seconds_to_target")
    secs = " ".join("%.1f" % r["seconds_to_target"] if r["seconds_to_target"] is not None else "-" for r in runs)
    steps = "/".join(str(r.get("steps_to_target", "-")) for r in runs)
    ratio = "%.2fx" % (peer_s / s) if s and peer_s else "-"
    print("%-46s %18s %7s %8.2f%% %10.0f %14s" % (name, ("%.1f [%s]" % (s, secs)) if s else "not reached [%s]" % secs, steps,
          100 * max(r["best_accuracy"] for r in runs), statistics.median(r["images_per_sec"] for r in runs), ratio))
PY
