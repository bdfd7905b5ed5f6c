#!/usr/bin/env bash
# The first epoch and a loader made per epoch (issue 29 item 3):
# bench/first_epoch.py's four cells (faster.Loader and torchvision's
# ImageFolder + DataLoader, each long-lived and made anew per epoch) on one
# core (taskset), the train recipe at 224, batch 64, one worker, EPOCHS
# epochs, on held-out photographs (bench/imagenet_like.py --seed 11, not a
# set anything was tuned on). The cells take turns, ROUNDS times; each
# figure is the median over the rounds, so load from other users of the
# machine hits all alike. With FASTER_BEFORE=path/to/an/older/faster its
# faster.Loader cells run in the same turns (before/after rows).
# Usage: bench/run_first_epoch.sh [EPOCHS] [ROUNDS] [CORE]
set -euo pipefail
cd "$(dirname "$0")/.."
epochs=${1:-4}
rounds=${2:-5}
core=${3:-0}
export PATH=/usr/local/go/bin:$PATH
go build -o bin/faster ./cmd/faster
tree=${FASTER_FIRST_EPOCH_TREE:-/tmp/faster-first-epoch}
/usr/bin/python3 bench/imagenet_like.py "$tree" --classes 20 --per-class 20 --seed 11 --quality 92 >/dev/null
export PYTHONPATH=python
out=$(mktemp -d)
bins=("bin/faster")
[ -n "${FASTER_BEFORE:-}" ] && bins+=("$FASTER_BEFORE")
for r in $(seq "$rounds"); do
	for pattern in long perepoch; do
		for b in "${bins[@]}"; do
			tag=faster; [ "$b" != bin/faster ] && tag=before
			FASTER_BIN=$b taskset -c "$core" /usr/bin/python3 bench/first_epoch.py "$tree" --loader faster \
				--pattern "$pattern" --epochs "$epochs" >>"$out/$tag-$pattern.jsonl"
		done
		taskset -c "$core" /usr/bin/python3 bench/first_epoch.py "$tree" --loader torchvision \
			--pattern "$pattern" --epochs "$epochs" >>"$out/torchvision-$pattern.jsonl"
	done
done
/usr/bin/python3 - "$out" "$rounds" "$epochs" <<'PY'
import glob, json, os, statistics as st, sys
out, rounds, epochs = sys.argv[1], sys.argv[2], sys.argv[3]
rows = {}
for p in sorted(glob.glob(os.path.join(out, "*.jsonl"))):
    tag, pattern = os.path.basename(p)[:-6].rsplit("-", 1)
    runs = [json.loads(l) for l in open(p)]
    med = lambda f: st.median(f(r) for r in runs)
    rows[(tag, pattern)] = dict(
        first=med(lambda r: r["epochs"][0]), steady=med(lambda r: st.median(r["epochs"][1:])),
        batch0=med(lambda r: r["first_batch"][0]), cpu=med(lambda r: r["cpu_seconds_per_1000_images"]),
        spread=(min(r["cpu_seconds_per_1000_images"] for r in runs), max(r["cpu_seconds_per_1000_images"] for r in runs)))
print(f"{rounds} rounds, {epochs} epochs of {json.loads(open(glob.glob(os.path.join(out, '*.jsonl'))[0]).readline())['images'] // int(epochs)} images, one core; medians over the rounds\n")
print("| loader | pattern | first epoch (s) | later epochs (s) | first batch (s) | CPU-s per 1,000 images (range) | torchvision's CPU / this |")
print("|---|---|---|---|---|---|---|")
for (tag, pattern), v in sorted(rows.items(), key=lambda kv: (kv[0][1], kv[0][0])):
    tv = rows.get(("torchvision", pattern))
    ratio = "%.2f×" % (tv["cpu"] / v["cpu"]) if tv and tag != "torchvision" else ""
    print(f"| {tag} | {pattern} | {v['first']:.3f} | {v['steady']:.3f} | {v['batch0']:.3f} | {v['cpu']:.2f} ({v['spread'][0]:.2f}–{v['spread'][1]:.2f}) | {ratio} |")
PY
rm -rf "$out"
