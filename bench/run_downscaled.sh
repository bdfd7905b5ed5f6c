#!/usr/bin/env bash
# The downscaled pack as the fast path (issue 29 item 2; the study:
# "downscale ImageNet for validating ideas quickly"): images per CPU-second
# of the train recipe on one core (taskset), at 224 and at the lower
# resolutions of progressive resizing, for the full-size photographs and for
# their `faster resize --max-size 256` copy, each packed into shards and
# read by `faster bench load`, beside torchvision's ImageFolder +
# DataLoader (bench/serve_loop.py, one worker) on the same two trees, all
# in the same run. Photographs: bench/imagenet_like.py --seed 13 (held out:
# nothing was tuned on them), quality 92. CPU per image (user + system),
# lowest of ROUNDS turns per cell, start-up included (torch's import not).
# Usage: bench/run_downscaled.sh [ROUNDS] [CORE] [EPOCHS]
# env: NOISE (0; imagenet_like.py --noise: 8 gives ImageNet's bytes per
#      pixel, about 72 kB a photograph here), FASTER_BEFORE (another faster
#      binary, measured in the same turns as a column of its own)
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-3}
core=${2:-0}
epochs=${3:-2}
export PATH=/usr/local/go/bin:$PATH
go build -o bin/faster ./cmd/faster
noise=${NOISE:-0}
before=${FASTER_BEFORE:-}
base=${FASTER_DOWNSCALED_DIR:-/tmp/faster-downscaled}
[ "$noise" = 0 ] || base=$base-noise$noise
full=$base/full small=$base/small256
/usr/bin/python3 bench/imagenet_like.py "$full" --classes 20 --per-class 25 --seed 13 --quality 92 --noise "$noise" >/dev/null
bin/faster resize --src "$full" --dst "$small" --max-size 256 --quality 92 >/dev/null
for t in full small256; do
	[ -f "$base/$t-shards/manifest.json" ] || bin/faster pack "$base/$t" "$base/$t-shards" --shards 4 >/dev/null
done
export PYTHONPATH=python FASTER_BIN=bin/faster
cpu() { /usr/bin/python3 -c "import json,sys; print(json.load(sys.stdin)['cpu_seconds_per_1000_images'])"; }
low() { /usr/bin/python3 -c "print(min($1, $2))"; }
ips() { /usr/bin/python3 -c "print(round(1000/$1))"; }
echo "$(find "$full" -name '*.JPEG' | wc -l) photographs: full size (mean $(/usr/bin/python3 -c "
import glob, os
from PIL import Image
fs = glob.glob('$full/*/*.JPEG'); px = [Image.open(f).size for f in fs]
print('%dx%d, %d kB' % (sum(w for w, h in px) / len(px), sum(h for w, h in px) / len(px), sum(os.path.getsize(f) for f in fs) / len(fs) / 1000))
")) and shorter edge 256 ($(du -sk "$small" | cut -f1) kB in all); train recipe, batch 64, $epochs epochs, one core, lowest CPU of $rounds turns:"
echo
head="| data | resolution | torchvision images/CPU-s | faster bench load images/CPU-s | ratio |" rule="|---|---|---|---|---|"
[ -z "$before" ] || head="$head before ($before) images/CPU-s | now / before |" rule="$rule---|---|"
printf "%s\n%s\n" "$head" "$rule"
# load BIN DATA RES: CPU-s per 1,000 images of `BIN bench load`, one core.
load() { taskset -c "$core" "$1" bench load "$2" --workers 1 --batch 64 --epochs "$epochs" --resolution "$3" --json | cpu; }
for res in 224 160 128; do
	for t in full small256; do
		tv=1e9 fa=1e9 fb=1e9
		for r in $(seq "$rounds"); do
			c=$(taskset -c "$core" /usr/bin/python3 bench/serve_loop.py "$base/$t" --loader torchvision --workers 1 \
				--batch 64 --epochs "$epochs" --resolution "$res" | cpu)
			tv=$(low "$tv" "$c")
			fa=$(low "$fa" "$(load bin/faster "$base/$t-shards" "$res")")
			[ -z "$before" ] || fb=$(low "$fb" "$(load "$before" "$base/$t-shards" "$res")")
		done
		row=$(printf "| %s | %d | %s | %s | %.2f× |" "$t" "$res" "$(ips "$tv")" "$(ips "$fa")" "$(/usr/bin/python3 -c "print($tv/$fa)")")
		[ -z "$before" ] || row=$(printf "%s %s | %.2f× |" "$row" "$(ips "$fb")" "$(/usr/bin/python3 -c "print($fb/$fa)")")
		echo "$row"
	done
done
