#!/usr/bin/env bash
# Images/s delivered into a torch training loop's hands (the loop only
# touches each tensor; bench/serve_loop.py): faster.Loader, fed by
# `faster serve` through shared memory (rows decoded straight into the
# slots), against torchvision ImageFolder + DataLoader and against
# `faster bench load` (the pipeline alone, no consumer process), with the
# same worker cores (every run pinned to the same CPUs by taskset;
# DataLoader num_workers = faster's decode workers = the number of cores),
# on an ImageFolder of real photographs (bench/imagefolder.py), train
# transform at 224, in the same run. faster.Loader runs in both layouts:
# f32-chw (normalised float32 NCHW, what the peer hands over) and u8-hwc
# (uint8 NHWC; normalising is the accelerator's work, docs/serve.md).
# Rows for 1 core and for all cores in CORES. The loaders take turns,
# ROUNDS times, and each keeps its best, so that load from other users of
# the machine hits all alike; compare the ratios, not the absolutes.
# With FASTER_BEFORE=path/to/an/older/faster, that binary's serve runs in
# the same turns (before/after rows).
# Usage: bench/run_serve.sh [EPOCHS] [BATCH] [CORES] [ROUNDS]   (CORES: e.g. 0,1)
set -euo pipefail
cd "$(dirname "$0")/.."
epochs=${1:-2}
batch=${2:-64}
cores=${3:-$(seq -s, 0 $(($(nproc) - 1)))}
rounds=${4:-2}
export PATH=/usr/local/go/bin:$PATH
go build -o bin/faster ./cmd/faster
tree=$(/usr/bin/python3 bench/imagefolder.py "${FASTER_IMAGEFOLDER:-/tmp/faster-imagefolder}" 10 50)
export PYTHONPATH=python
j() { /usr/bin/python3 -c "import json,sys; print(json.load(sys.stdin)['images_per_sec'])"; }
py() { /usr/bin/python3 -c "print($1)"; }
# loop CPUS LOADER WORKERS BIN LAYOUT
loop() { FASTER_BIN=$4 taskset -c "$1" /usr/bin/python3 bench/serve_loop.py "$tree" --loader "$2" --workers "$3" --batch "$batch" --epochs "$epochs" --layout "$5" | j; }
# load CPUS WORKERS LAYOUT
load() { taskset -c "$1" bin/faster bench load "$tree" --workers "$2" --batch "$batch" --epochs "$epochs" --layout "$3" --json | j; }

echo "ImageFolder of $(find "$tree" -name '*.JPEG' | wc -l) real photographs (shorter edge 300-500), train transform to 224x224, batch $batch, $epochs epochs, best of $rounds turns:"
echo
printf "| cores | loader                                        | workers | images/s | vs DataLoader | vs bench load |\n"
printf "|-------|-----------------------------------------------|---------|----------|---------------|---------------|\n"
for cpus in 0 "$cores"; do
  w=$(echo "$cpus" | tr ',' '\n' | wc -l)
  tv=0; bf=0; bu=0; ff=0; fu=0; of=0; ou=0
  for _ in $(seq "$rounds"); do
    tv=$(py "max($tv, $(loop "$cpus" torchvision "$w" bin/faster f32-chw))")
    ff=$(py "max($ff, $(loop "$cpus" faster "$w" bin/faster f32-chw))")
    bf=$(py "max($bf, $(load "$cpus" "$w" f32-chw))")
    fu=$(py "max($fu, $(loop "$cpus" faster "$w" bin/faster u8-hwc))")
    bu=$(py "max($bu, $(load "$cpus" "$w" u8-hwc))")
    if [ -n "${FASTER_BEFORE:-}" ]; then
      of=$(py "max($of, $(loop "$cpus" faster "$w" "$FASTER_BEFORE" f32-chw))")
      ou=$(py "max($ou, $(loop "$cpus" faster "$w" "$FASTER_BEFORE" u8-hwc))")
    fi
  done
  row() { printf "| %-5s | %-45s | %7d | %8.0f | %12.2fx | %s |\n" "$cpus" "$1" "$w" "$2" "$(py "$2/$tv")" "$3"; }
  row "torchvision ImageFolder + DataLoader" "$tv" "             "
  row "faster bench load, f32-chw" "$bf" "        1.00x"
  row "faster bench load, u8-hwc" "$bu" "        1.00x"
  row "faster.Loader, f32-chw" "$ff" "$(printf '%12.2fx' "$(py "$ff/$bf")")"
  row "faster.Loader, u8-hwc (the fast path)" "$fu" "$(printf '%12.2fx' "$(py "$fu/$bu")")"
  if [ -n "${FASTER_BEFORE:-}" ]; then
    row "faster.Loader, f32-chw, before (\$FASTER_BEFORE)" "$of" "$(printf '%12.2fx' "$(py "$of/$bf")")"
    row "faster.Loader, u8-hwc, before (\$FASTER_BEFORE)" "$ou" "$(printf '%12.2fx' "$(py "$ou/$bu")")"
  fi
  [ "$cpus" = "$cores" ] && break
done
