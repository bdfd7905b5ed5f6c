#!/usr/bin/env bash
# Time to accuracy over several seeds, at the seed's batch 512 on the
# full-width ThinNet (32/64/128), the fast recipe with its one-cycle peak
# at 0.2 over 2 epochs: bench/run_time_to_accuracy.sh once per seed (ours
# and the PyTorch peer from the same start: ours' initial weights and
# sample order, --same-start), each run to the end of its 2 epochs (TARGET
# above what either reaches, so both curves are whole), then a table of
# the training seconds each engine took to first reach each of TARGETS
# (read off the evaluations every EVAL_EVERY steps, evaluation excluded),
# the ratio PyTorch / ours where both reach it, the best accuracy and the
# images/s.
#
#   bench/run_tta_seeds.sh [DATA]
#   env: SEEDS ("1 2 3 4 5"), TARGETS ("0.75 0.80 0.82 0.84 0.85"),
#        FILTERS (32,64,128), BATCH (512), LR (0.2), EPOCHS (2),
#        EVAL_EVERY (39), SAME_START (1), THREADS, CPUS, WINOGRAD as
#        bench/run_time_to_accuracy.sh; OUT (/tmp/faster-tta-seeds: one
#        directory per seed with tta.json and tta.png, and summary.json)
#   SUMMARY_ONLY=1 prints the table of the runs already in OUT.
set -euo pipefail
cd "$(dirname "$0")/.."
SEEDS=${SEEDS:-1 2 3 4 5}
TARGETS=${TARGETS:-0.75 0.80 0.82 0.84 0.85}
OUT=${OUT:-/tmp/faster-tta-seeds}
mkdir -p "$OUT"
if [ "${SUMMARY_ONLY:-0}" != 1 ]; then
  for s in $SEEDS; do
    mkdir -p "$OUT/seed$s"
    # 0.999: no evaluation stops a run early.
    OUT="$OUT/seed$s" TARGET=0.999 ROUNDS=1 SEED="$s" FILTERS=${FILTERS:-32,64,128} BATCH=${BATCH:-512} \
      LR=${LR:-0.2} EPOCHS=${EPOCHS:-2} EVAL_EVERY=${EVAL_EVERY:-39} bench/run_time_to_accuracy.sh "$@" >/dev/null
  done
fi
/usr/bin/python3 - "$OUT" "$TARGETS" $SEEDS <<'EOF'
import json, sys
out, targets, seeds = sys.argv[1], [float(t) for t in sys.argv[2].split()], sys.argv[3:]

def first(curve, t):
    for p in curve:
        if p["test_accuracy"] >= t:
            return p["seconds"], p["step"]
    return None, None

rows, summary = [], []
for s in seeds:
    with open("%s/seed%s/tta.json" % (out, s)) as f:
        runs = {r["engine"]: r for r in json.load(f)["runs"]}
    ours, peer = runs["faster"], runs.get("pytorch")
    for t in targets:
        a, sa = first(ours["curve"], t)
        b, sb = first(peer["curve"], t) if peer else (None, None)
        ratio = b / a if a and b else None
        summary.append({"seed": int(s), "target": t, "ours_seconds": a, "ours_step": sa, "pytorch_seconds": b,
                        "pytorch_step": sb, "ratio": ratio})
        cell = lambda v, st: "%.1f (%d)" % (v, st) if v is not None else "not reached"
        rows.append([s, "%.0f%%" % (100 * t), cell(a, sa), cell(b, sb), "%.2f×" % ratio if ratio else "–"])
    rows.append([s, "best", "%.2f%%" % (100 * ours["best_accuracy"]),
                 "%.2f%%" % (100 * peer["best_accuracy"]) if peer else "–", ""])
    rows.append([s, "images/s", "%.1f" % ours["images_per_sec"], "%.1f" % peer["images_per_sec"] if peer else "–",
                 "%.2f×" % (ours["images_per_sec"] / peer["images_per_sec"]) if peer else ""])
head = ["seed", "target", "ours s (step)", "PyTorch s (step)", "PyTorch / ours"]
w = [max(len(str(r[i])) for r in rows + [head]) for i in range(len(head))]
for r in [head, ["-" * n for n in w]] + rows:
    print("| " + " | ".join(str(c).ljust(w[i]) for i, c in enumerate(r)) + " |")
both = [r for r in summary if r["ratio"]]
for t in targets:
    rs = [r["ratio"] for r in both if r["target"] == t]
    n_ours = sum(1 for r in summary if r["target"] == t and r["ours_seconds"] is not None)
    n_peer = sum(1 for r in summary if r["target"] == t and r["pytorch_seconds"] is not None)
    pa = sum(r["ours_seconds"] for r in both if r["target"] == t)
    pb = sum(r["pytorch_seconds"] for r in both if r["target"] == t)
    print("%.0f%%: ours reached it with %d of %d seeds, PyTorch with %d; where both do, PyTorch / ours %s%s" % (
        100 * t, n_ours, len(seeds), n_peer, ", ".join("%.2f×" % v for v in rs) or "–",
        "; summed over those seeds %.1f s / %.1f s = %.2f×" % (pb, pa, pb / pa) if pa else ""))
with open("%s/summary.json" % out, "w") as f:
    json.dump(summary, f, indent=2)
EOF
