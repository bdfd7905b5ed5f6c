#!/usr/bin/env bash
# The main job on the default data (make demo): pack the real Fashion-MNIST
# (Debian package dataset-fashion-mnist) into TFRecord shards, verify them,
# inspect one, and print a summary table. Later stages (load benchmark,
# training) append to this script as they land.
# Usage: scripts/demo.sh BIN DATA OUT
set -euo pipefail
bin=${1:-bin/faster} data=${2:-/usr/share/datasets/fashion-mnist} out=${3:-out}
dst="$out/fashion-mnist"
mkdir -p "$out"
json() { /usr/bin/python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print(d$2)" "$1"; }

echo "== pack $data -> $dst"
"$bin" pack "$data" "$dst" --split train --json > "$out/pack-train.json"
"$bin" pack "$data" "$dst" --split test --json > "$out/pack-test.json"
echo "== verify $dst"
"$bin" verify "$dst" --json > "$out/verify.json" || { cat "$out/verify.json"; exit 1; }
echo "== inspect (first shard)"
"$bin" inspect --first 3 "$dst/train-00000-of-00008.tfrecord"

echo
echo "| step            | records | MB    | seconds | rate                     |"
echo "|-----------------|---------|-------|---------|--------------------------|"
for s in train test; do
  f="$out/pack-$s.json"
  if [ "$(json "$f" "['kept_shards']")" = "$(json "$f" "['shards']")" ]; then
    rate="resumed: all shards kept"
  else
    rate=$(printf "%6.0f records/s" "$(json "$f" "['records_per_sec']")")
  fi
  printf "| pack %-10s | %7s | %5.1f | %7.2f | %-24s |\n" "$s" \
    "$(json "$f" "['records']")" "$(json "$f" "['bytes']/1e6")" "$(json "$f" "['seconds']")" "$rate"
done
printf "| verify (CRC+sha)| %7s | %5.1f | %7.2f | %6.0f MB/s              |\n" \
  "$(json "$out/verify.json" "['records']")" "$(json "$out/verify.json" "['bytes']/1e6")" \
  "$(json "$out/verify.json" "['seconds']")" "$(json "$out/verify.json" "['mb_per_sec']")"

echo
echo "== load benchmark on the shards (faster bench load)"
"$bin" bench load "$dst" --transform none --batch 512 --epochs 2 --plot "$out/load.png"
"$bin" bench load "$dst" --transform train --resolution 28 --batch 512 --workers 1,0

echo
echo "== train the Faster Training study's ThinNet on the real Fashion-MNIST (faster train; 8,192 images, one epoch)"
"$bin" train --data "$data" --model thinnet --epochs 1 --batch 64 --lr 0.01 --limit 8192 --test-limit 2000
echo
echo "== the Faster Training study's Model Running table (faster bench train): single / DP / DDP x plain / +autotune / +AMP,"
echo "   a narrow ThinNet (widths 8,16,32) on 8,192 images; each of the 14 cells warmed up, then run 3 times"
echo "   in alternating order: medians with their spread (a few minutes; --repeats 1 for one pass)"
"$bin" bench train --data "$data" --filters 8,16,32 --limit 8192 --test-limit 2000 --batch 64 --plot "$out/train.png"
echo
echo "Shards, indexes and manifest are in $dst; JSON summaries in $out/*.json; charts in $out/load.png, $out/train.png."
