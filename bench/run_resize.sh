#!/usr/bin/env bash
# `faster resize --max-size 256 --workers 1` against the seed's script on
# Python/OpenCV (bench/peer_resize_opencv.py, one process, cv2 threads 1),
# one core each (taskset), same trees, same run, best of REPS runs each:
#   imagenet:  bench/photos.py's photographs (shorter edge 375, ImageNet's
#              typical size) copied COPIES times into train/ and val/ class
#              folders;
#   fullsize:  Debian mate-backgrounds as installed (JPEG and PNG
#              wallpapers, 1280x1024 to 5640x3172).
# Prints images/s of each and the ratio. Usage: bench/run_resize.sh [COPIES] [REPS]
set -euo pipefail
cd "$(dirname "$0")/.."
copies=${1:-8}
reps=${2:-2}
export PATH=/usr/local/go/bin:$PATH
go build -o bin/faster ./cmd/faster
photos=$(/usr/bin/python3 bench/photos.py)
work=${FASTER_BENCH_DIR:-/tmp/faster-resize-bench}
rm -rf "$work"
mkdir -p "$work/imagenet" "$work/fullsize"
for i in $(seq 1 "$copies"); do
  for split in train val; do
    d="$work/imagenet/$split/n0$i"
    mkdir -p "$d"
    for f in "$photos"/*.JPEG; do cp "$f" "$d/"; done
  done
done
cp -r /usr/share/backgrounds/mate/. "$work/fullsize/"

rate() { /usr/bin/python3 -c 'import json,sys; print(json.loads(sys.stdin.read())["images_per_sec"])'; }
best() { /usr/bin/python3 -c 'import sys; print(max(float(x) for x in sys.argv[1:]))' "$@"; }

for tree in imagenet fullsize; do
  src="$work/$tree"
  n=$(find "$src" -type f | wc -l)
  py=() go=()
  for r in $(seq 1 "$reps"); do
    rm -rf "$work/out-py" "$work/out-go"
    py+=("$(taskset -c 0 /usr/bin/python3 bench/peer_resize_opencv.py --src "$src" --dst "$work/out-py" --max-size 256 2>/dev/null | rate)")
    go+=("$(taskset -c 0 bin/faster resize --src "$src" --dst "$work/out-go" --max-size 256 --workers 1 --json | rate)")
  done
  p=$(best "${py[@]}"); g=$(best "${go[@]}")
  printf '%-9s %4d images  opencv %7.1f images/s  faster %7.1f images/s  ratio %.2fx  (runs: opencv %s; faster %s)\n' \
    "$tree" "$n" "$p" "$g" "$(/usr/bin/python3 -c "print($g/$p)")" "${py[*]}" "${go[*]}"
done
rm -rf "$work"
