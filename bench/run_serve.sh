#!/usr/bin/env bash
# Images/s delivered into a torch training loop's hands (the loop only
# touches each tensor; bench/serve_loop.py): faster.Loader, fed by
# `faster serve` through shared memory, against torchvision ImageFolder +
# DataLoader, with the same worker cores (both runs pinned to the same CPUs
# by taskset; DataLoader num_workers = faster's decode workers = the number
# of cores), on an ImageFolder of real photographs (bench/imagefolder.py),
# train transform at 224, in the same run. Rows for 1 core and for all
# cores in CORES.
# Usage: bench/run_serve.sh [EPOCHS] [BATCH] [CORES]   (CORES: e.g. 0,1)
set -euo pipefail
cd "$(dirname "$0")/.."
epochs=${1:-2}
batch=${2:-64}
cores=${3:-$(seq -s, 0 $(($(nproc) - 1)))}
export PATH=/usr/local/go/bin:$PATH
go build -o bin/faster ./cmd/faster
tree=$(/usr/bin/python3 bench/imagefolder.py "${FASTER_IMAGEFOLDER:-/tmp/faster-imagefolder}" 10 50)
export PYTHONPATH=python FASTER_BIN=bin/faster
j() { /usr/bin/python3 -c "import json,sys; print(json.load(sys.stdin)['images_per_sec'])"; }
run() { taskset -c "$1" /usr/bin/python3 bench/serve_loop.py "$tree" --loader "$2" --workers "$3" --batch "$batch" --epochs "$epochs" | j; }

echo "ImageFolder of $(find "$tree" -name '*.JPEG' | wc -l) real photographs (shorter edge 300-500), train transform to 224x224 float32, batch $batch, $epochs epochs:"
echo
printf "| cores | loader                                 | workers | images/s | vs DataLoader |\n"
printf "|-------|----------------------------------------|---------|----------|---------------|\n"
for cpus in 0 "$cores"; do
  w=$(echo "$cpus" | tr ',' '\n' | wc -l)
  # Interleave the two loaders, twice, and keep each one's best, so that
  # load from other users of the machine hits both alike.
  tv=0; fa=0
  for _ in 1 2; do
    tv=$(/usr/bin/python3 -c "print(max($tv, $(run "$cpus" torchvision "$w")))")
    fa=$(/usr/bin/python3 -c "print(max($fa, $(run "$cpus" faster "$w")))")
  done
  printf "| %-5s | torchvision ImageFolder + DataLoader   | %7d | %8.0f | 1.00x         |\n" "$cpus" "$w" "$tv"
  printf "| %-5s | faster.Loader (serve, shared memory)   | %7d | %8.0f | %.2fx         |\n" "$cpus" "$w" "$fa" "$(/usr/bin/python3 -c "print($fa/$tv)")"
  [ "$cpus" = "$cores" ] && break
done
