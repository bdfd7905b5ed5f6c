#!/usr/bin/env bash
# Raw against encoded Caffe Datums, one core (taskset -c 0), same photos,
# same run: the ImageFolder tree of bench/imagefolder.py written as two
# Caffe LMDBs by Python's lmdb (cmd/faster/testdata/write_formats.py, the
# Datum protobuf by hand, as convert_imageset writes it with and without
# --encoded: the JPEG files' bytes, or 3 x H x W planes of B, G, R), then
# `faster bench load --workers 1` on each, ROUNDS times, alternating which
# goes first; medians and the per-round ratio raw/encoded. Then the CPU time
# per sample (--profile, thread CPU time: what the machine's other load does
# not change). FASTER=path runs another binary (an older build, for a
# before/after).
# Usage: bench/run_lmdb_raw.sh [ROUNDS] [EPOCHS] [BATCH]
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-3}
epochs=${2:-2}
batch=${3:-64}
export PATH=/usr/local/go/bin:$PATH
faster=${FASTER:-}
if [ -z "$faster" ]; then
  go build -o bin/faster ./cmd/faster
  faster=bin/faster
fi
tree=$(/usr/bin/python3 bench/imagefolder.py "${FASTER_IMAGEFOLDER:-/tmp/faster-imagefolder}" 10 50)
dbs=${tree}-lmdb
if [ ! -e "$dbs/.complete" ]; then
  rm -rf "$dbs" && mkdir -p "$dbs"
  /usr/bin/python3 cmd/faster/testdata/write_formats.py "$tree" "$dbs/py.tar" "$dbs/encoded.lmdb" "$dbs/raw.lmdb"
  rm -f "$dbs/py.tar"
  touch "$dbs/.complete"
fi
j() { /usr/bin/python3 -c "import json,sys; d=json.load(sys.stdin); d=d[0] if isinstance(d,list) else d; print(d$1)"; }
run() { taskset -c 0 "$faster" bench load "$dbs/$1.lmdb" --workers 1 --batch "$batch" --epochs "$epochs" --json; }
enc=(); raw=(); ratios=(); encb=""; rawb=""
for r in $(seq "$rounds"); do
  if [ $((r % 2)) = 1 ]; then e=$(run encoded); w=$(run raw); else w=$(run raw); e=$(run encoded); fi
  er=$(echo "$e" | j "['images_per_sec']"); wr=$(echo "$w" | j "['images_per_sec']")
  encb=$(echo "$e" | j "['verdict']['detail']"); rawb=$(echo "$w" | j "['verdict']['detail']")
  enc+=("$er"); raw+=("$wr"); ratios+=("$(/usr/bin/python3 -c "print($wr/$er)")")
  echo "round $r: encoded $er images/s, raw $wr images/s" >&2
done
med() { /usr/bin/python3 -c "import statistics,sys; print(statistics.median(float(x) for x in sys.argv[1:]))" "$@"; }
cpu() { taskset -c 0 "$faster" bench load "$dbs/$1.lmdb" --workers 1 --batch "$batch" --epochs "$epochs" --profile | awk -F'|' '/all \(CPU per sample\)/ {gsub(/ /,"",$3); print $3}'; }
ce=$(cpu encoded); cr=$(cpu raw)
n=$(find "$tree" -name '*.JPEG' | wc -l)
echo "$n photographs (shorter edge 300-500) as Caffe LMDBs, train transform, batch $batch, 1 worker, one core, $rounds rounds of $epochs epochs:"
echo
printf "| Datums                       | images/s (median) | CPU µs/sample | verdict (last round) |\n"
printf "|------------------------------|-------------------|---------------|----------------------|\n"
printf "| encoded (JPEG bytes)         | %17.0f | %13s | %s |\n" "$(med "${enc[@]}")" "$ce" "$encb"
printf "| raw (planar BGR pixels)      | %17.0f | %13s | %s |\n" "$(med "${raw[@]}")" "$cr" "$rawb"
echo
echo "raw / encoded: $(med "${ratios[@]}") (median of the rounds' ratios: ${ratios[*]}); by CPU per sample: $(/usr/bin/python3 -c "print(round($ce/$cr, 2))")"
