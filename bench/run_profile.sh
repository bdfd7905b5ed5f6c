#!/usr/bin/env bash
# Where a sample's CPU time goes: `faster bench load --profile` (one worker)
# beside torchvision's recipe timed the same way (bench/peer_profile.py),
# both by the thread's CPU clock, on ImageNet-shaped photographs
# (bench/imagenet_like.py) from the page cache, train transform at 224.
# Also ours with two workers, whose CPU per sample says whether a second
# core adds a core's worth of work (wall-clock speed-up needs idle cores).
#
#   bench/run_profile.sh [DIR]
#   env: CLASSES (10), PER_CLASS (60), SEED (11), EPOCHS (2), LAYOUT
#        (f32-chw; u8-hwc leaves normalising to the accelerator)
set -euo pipefail
cd "$(dirname "$0")/.."
PY=/usr/bin/python3
EPOCHS=${EPOCHS:-2}
LAYOUT=${LAYOUT:-f32-chw}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
DIR=${1:-}
if [ -z "$DIR" ]; then
  DIR=$tmp/photos
  $PY bench/imagenet_like.py "$DIR" --classes "${CLASSES:-10}" --per-class "${PER_CLASS:-60}" --seed "${SEED:-11}" >/dev/null
fi
go build -o bin/faster ./cmd/faster
echo "profile: $DIR, train at 224, batch 64, $EPOCHS epochs, layout $LAYOUT; load: $(cut -d' ' -f1-3 /proc/loadavg)" >&2
for w in 1 2; do
  bin/faster bench load "$DIR" --transform train --workers "$w" --epochs "$EPOCHS" --batch 64 --layout "$LAYOUT" --profile --json 2>/dev/null >"$tmp/ours.$w.json"
done
$PY bench/peer_profile.py "$DIR" --epochs "$EPOCHS" >"$tmp/peer.json"
$PY - "$tmp" <<'PY'
import json, sys
d = sys.argv[1]
o1 = json.load(open(d + "/ours.1.json"))["profile"]
o2 = json.load(open(d + "/ours.2.json"))["profile"]
p = json.load(open(d + "/peer.json"))
pp = {ph["name"]: ph["us_per_sample"] for ph in p["phases"]}
ours = {ph["name"]: ph["us_per_sample"] for ph in o1["phases"]}
rows = [("read", "read"), ("decode", "decode"), ("crop/resize", "crop/resize"),
        ("normalise/convert + batch copy", None)]
print("| phase (CPU µs per sample) | faster, 1 worker | faster, 2 workers | torchvision+PIL | torchvision / faster |")
print("|---|---|---|---|---|")
o2p = {ph["name"]: ph["us_per_sample"] for ph in o2["phases"]}
for name, peer in rows:
    pv = pp[peer] if peer else pp["normalise/convert"] + pp["batch copy"]
    print("| %s | %.0f | %.0f | %.0f | %.1f× |" % (name, ours[name], o2p[name], pv, pv / max(ours[name], 1e-9)))
print("| all | %.0f | %.0f | %.0f | %.1f× |" % (o1["us_per_sample"], o2["us_per_sample"], p["us_per_sample"], p["us_per_sample"] / o1["us_per_sample"]))
print("| images/s per core | %.0f | %.0f | %.0f | |" % (o1["images_per_sec_per_core"], o2["images_per_sec_per_core"], p["images_per_sec_per_core"]))
print("(torchvision's normalise/convert %.0f µs + batch copy %.0f µs; ours writes the row in place)" % (pp["normalise/convert"], pp["batch copy"]))
PY
