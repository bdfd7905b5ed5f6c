#!/usr/bin/env bash
# The price of each decode (docs/serve.md, "Decode: exact or DCT-scaled"):
# `faster bench load --profile` (one worker, thread CPU clock), eval by
# default (full-size decode: torchvision's pixels) and with
# --fast-eval-decode (DCT-scaled), train by default (DCT-scaled where the
# random crop allows) and with --full-decode, beside torchvision's
# Resize(256) + CenterCrop(224) (bench/peer_eval_cost.py) and
# RandomResizedCrop(224) + flip (bench/peer_profile.py) timed the same way
# (ToTensor + Normalize in all), on the
# full-size photographs of mate-backgrounds (1280x1024 to 2560x1920), each
# linked COPIES times, from the page cache.
#
#   bench/run_eval_decode.sh [DIR]     env: COPIES (8), EPOCHS (2), FASTER_BIN
#   (a built binary; default: go build -o bin/faster)
set -euo pipefail
cd "$(dirname "$0")/.."
PY=/usr/bin/python3
EPOCHS=${EPOCHS:-2}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
DIR=${1:-}
if [ -z "$DIR" ]; then
  DIR=$tmp/photos
  mkdir -p "$DIR/nature"
  for r in $(seq "${COPIES:-8}"); do
    for f in /usr/share/backgrounds/mate/nature/*.jpg; do ln -s "$f" "$DIR/nature/r${r}_$(basename "$f")"; done
  done
fi
BIN=${FASTER_BIN:-}
if [ -z "$BIN" ]; then
  go build -o bin/faster ./cmd/faster
  BIN=bin/faster
fi
echo "eval decode: $DIR, Resize(256)+CenterCrop(224), $EPOCHS epochs; load: $(cut -d' ' -f1-3 /proc/loadavg)" >&2
"$BIN" bench load "$DIR" --transform eval --workers 1 --epochs "$EPOCHS" --batch 16 --profile --json 2>/dev/null >"$tmp/full.json"
"$BIN" bench load "$DIR" --transform eval --workers 1 --epochs "$EPOCHS" --batch 16 --profile --json --fast-eval-decode 2>/dev/null >"$tmp/fast.json"
$PY bench/peer_eval_cost.py "$DIR" --epochs "$EPOCHS" >"$tmp/peer.json"
"$BIN" bench load "$DIR" --transform train --workers 1 --epochs "$EPOCHS" --batch 16 --profile --json 2>/dev/null >"$tmp/train.json"
"$BIN" bench load "$DIR" --transform train --workers 1 --epochs "$EPOCHS" --batch 16 --profile --json --full-decode 2>/dev/null >"$tmp/trainfull.json"
$PY bench/peer_profile.py "$DIR" --epochs "$EPOCHS" --batch 16 >"$tmp/peertrain.json"
$PY - "$tmp" <<'PY'
import json, sys
d = sys.argv[1]
full = json.load(open(d + "/full.json"))["profile"]["us_per_sample"]
fast = json.load(open(d + "/fast.json"))["profile"]["us_per_sample"]
peer = json.load(open(d + "/peer.json"))["us_per_sample"]
train = json.load(open(d + "/train.json"))["profile"]["us_per_sample"]
trainfull = json.load(open(d + "/trainfull.json"))["profile"]["us_per_sample"]
peertrain = json.load(open(d + "/peertrain.json"))["us_per_sample"]
print("| recipe at 224 | decode | CPU ms per image | torchvision / this |")
print("|---|---|---:|---:|")
print("| eval (Resize 256 + CenterCrop) | default: full size, torchvision's pixels | %.1f | %.2fx |" % (full / 1e3, peer / full))
print("| eval | `--fast-eval-decode`: DCT-scaled | %.1f | %.2fx |" % (fast / 1e3, peer / fast))
print("| eval | torchvision 0.14 + PIL | %.1f | 1.00x |" % (peer / 1e3))
print("| train (RandomResizedCrop + flip) | default: DCT-scaled where the crop allows | %.1f | %.2fx |" % (train / 1e3, peertrain / train))
print("| train | `--full-decode`: full size | %.1f | %.2fx |" % (trainfull / 1e3, peertrain / trainfull))
print("| train | torchvision 0.14 + PIL | %.1f | 1.00x |" % (peertrain / 1e3))
PY
