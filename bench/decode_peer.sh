#!/usr/bin/env bash
# decode_peer.sh: libjpeg-turbo's own djpeg decoding JPEGs to RGB on one
# core, the peer of imgcodec's BenchmarkDecode. Prints images/s.
#   bench/decode_peer.sh [-scale 1/2] [-n ROUNDS] FILE...
# Each decode is one djpeg process (-rgb, output discarded), so the figure
# includes process start-up (~1 ms); BenchmarkDecode's in-process
# TurboJPEG peer (tjDecompress2) is the tighter comparison.
set -euo pipefail
scale=1/1 rounds=3
while [ $# -gt 0 ]; do
  case "$1" in
    -scale) scale=$2; shift 2;;
    -n) rounds=$2; shift 2;;
    *) break;;
  esac
done
[ $# -gt 0 ] || { echo "usage: $0 [-scale 1/N] [-n ROUNDS] FILE..." >&2; exit 2; }
command -v djpeg >/dev/null || { echo "decode_peer: djpeg missing (apt-get install libjpeg-turbo-progs)" >&2; exit 1; }
for f in "$@"; do djpeg -rgb -scale "$scale" -outfile /dev/null "$f"; done # warm the page cache
start=$(date +%s.%N)
for ((r = 0; r < rounds; r++)); do
  for f in "$@"; do taskset -c 0 djpeg -rgb -scale "$scale" -outfile /dev/null "$f"; done
done
end=$(date +%s.%N)
awk -v n=$((rounds * $#)) -v s="$start" -v e="$end" -v sc="$scale" \
  'BEGIN { printf "djpeg scale %s: %d images in %.2f s: %.1f images/s\n", sc, n, e - s, n / (e - s) }'
