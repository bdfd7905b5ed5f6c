#!/usr/bin/env bash
# `faster resize --max-size 256 --workers 1` against the seed's script on
# Python/OpenCV (bench/peer_resize_opencv.py, one process, cv2 threads 1),
# one core each (taskset -c 0, nice -n -10), same trees, same run,
# alternating (opencv, faster[, baseline]) REPS times:
#   imagenet:  ImageNet-sized photographs (shorter edge 375) copied COPIES
#              times into train/ and val/ class folders: bench/photos.py's
#              by default, or every JPEG under $FASTER_RESIZE_PHOTOS (for
#              example a tree from bench/imagenet_like.py with another seed);
#   fullsize:  Debian mate-backgrounds as installed (JPEG and PNG
#              wallpapers, 1280x1024 to 5640x3172).
# Prints, per tree, the median images/s of each and the median of the
# per-round ratios with their range (the machine may be shared: a round's
# two runs are back to back, so the ratio is steadier than either rate).
# FASTER_RESIZE_BASELINE=BINARY adds a third command, another build of
# `faster` (an older commit, or a wrapper adding --rgb), measured in the
# same rounds. FASTER_RESIZE_TREES picks trees (default "imagenet fullsize").
# Usage: bench/run_resize.sh [COPIES] [REPS]
set -euo pipefail
cd "$(dirname "$0")/.."
copies=${1:-8}
reps=${2:-5}
export PATH=/usr/local/go/bin:$PATH
go build -o bin/faster ./cmd/faster
base=${FASTER_RESIZE_BASELINE:-}
if [ -n "${FASTER_RESIZE_PHOTOS:-}" ]; then
  photos=$FASTER_RESIZE_PHOTOS
else
  photos=$(/usr/bin/python3 bench/photos.py)
fi
# In RAM (tmpfs) by default: both sides read and write the same files, and
# `faster resize` ends with one syncfs(2) of the destination's file system,
# which on a shared disk also waits for every other process's dirty data
# (the peer never syncs). FASTER_BENCH_DIR puts the trees elsewhere.
shm=/tmp
if [ -d /dev/shm ] && [ -w /dev/shm ]; then shm=/dev/shm; fi
work=${FASTER_BENCH_DIR:-$shm/faster-resize-bench}
rm -rf "$work"
mkdir -p "$work/imagenet" "$work/fullsize"
for i in $(seq 1 "$copies"); do
  for split in train val; do
    d="$work/imagenet/$split/n0$i"
    mkdir -p "$d"
    find "$photos" -type f \( -name '*.JPEG' -o -name '*.jpg' \) -print0 |
      while IFS= read -r -d '' f; do cp "$f" "$d/$(echo "${f#"$photos"/}" | tr / _)"; done
  done
done
cp -r /usr/share/backgrounds/mate/. "$work/fullsize/"

# rate prints "wall_rate cpu_rate": images per second of wall time and per
# CPU second of the process (user + system, inside its timed loop).
rate() {
  /usr/bin/python3 -c 'import json,sys
r = json.loads(sys.stdin.read())
print(r["images_per_sec"], (r["resized"] + r["copied"]) / r["cpu_seconds"])'
}
summary() { # name rates... -> "median (min-max)"
  /usr/bin/python3 -c 'import statistics,sys; v=[float(x) for x in sys.argv[1:]]; print("%.1f (%.1f-%.1f)" % (statistics.median(v), min(v), max(v)))' "$@"
}
ratios() { # a... -- b... -> median (min-max) of a[i]/b[i]
  /usr/bin/python3 -c '
import statistics, sys
a = sys.argv[1:]; k = a.index("--"); x, y = a[:k], a[k+1:]
r = [float(p) / float(q) for p, q in zip(x, y)]
print("%.2fx (%.2f-%.2f)" % (statistics.median(r), min(r), max(r)))' "$@"
}
one() { nice -n -10 taskset -c 0 "$@"; }

for tree in ${FASTER_RESIZE_TREES:-imagenet fullsize}; do
  src="$work/$tree"
  n=$(find "$src" -type f | wc -l)
  py=() go=() old=() pyc=() goc=() oldc=()
  for r in $(seq 1 "$reps"); do
    rm -rf "$work/out-py" "$work/out-go" "$work/out-old"
    read -r w c < <(one /usr/bin/python3 bench/peer_resize_opencv.py --src "$src" --dst "$work/out-py" --max-size 256 2>/dev/null | rate)
    py+=("$w") pyc+=("$c")
    read -r w c < <(one bin/faster resize --src "$src" --dst "$work/out-go" --max-size 256 --workers 1 --json | rate)
    go+=("$w") goc+=("$c")
    if [ -n "$base" ]; then
      read -r w c < <(one "$base" resize --src "$src" --dst "$work/out-old" --max-size 256 --workers 1 --json | rate)
      old+=("$w") oldc+=("$c")
    fi
  done
  printf '%-9s %4d images, %d rounds, median (range):\n' "$tree" "$n" "$reps"
  printf '  wall:       opencv %s images/s, faster %s images/s, ratio %s' \
    "$(summary "${py[@]}")" "$(summary "${go[@]}")" "$(ratios "${go[@]}" -- "${py[@]}")"
  if [ -n "$base" ]; then
    printf '; baseline %s, ratio %s' "$(summary "${old[@]}")" "$(ratios "${old[@]}" -- "${py[@]}")"
  fi
  printf '\n  per CPU-s:  opencv %s images/s, faster %s images/s, ratio %s' \
    "$(summary "${pyc[@]}")" "$(summary "${goc[@]}")" "$(ratios "${goc[@]}" -- "${pyc[@]}")"
  if [ -n "$base" ]; then
    printf '; baseline %s, ratio %s' "$(summary "${oldc[@]}")" "$(ratios "${oldc[@]}" -- "${pyc[@]}")"
  fi
  printf '\n'
done
rm -rf "$work"
