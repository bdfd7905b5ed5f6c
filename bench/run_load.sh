#!/usr/bin/env bash
# The loading benchmark, one core (taskset -c 0), same photos, same run:
# torchvision ImageFolder + DataLoader (bench/peer_dataloader.py, 1 worker)
# against `faster bench load --workers 1` on the same ImageFolder tree and
# on the same images packed into shards; then a run with --consumer-rate
# below the pipeline's rate, where the verdict must say "consumer".
# Usage: bench/run_load.sh [EPOCHS] [BATCH]
set -euo pipefail
cd "$(dirname "$0")/.."
epochs=${1:-2}
batch=${2:-64}
export PATH=/usr/local/go/bin:$PATH
go build -o bin/faster ./cmd/faster
tree=$(/usr/bin/python3 bench/imagefolder.py "${FASTER_IMAGEFOLDER:-/tmp/faster-imagefolder}" 10 50)
shards=${tree}-shards
bin/faster pack "$tree" "$shards" --shards 8 >/dev/null
j() { /usr/bin/python3 -c "import json,sys; d=json.load(sys.stdin); print(d$1)"; }

peer=$(taskset -c 0 /usr/bin/python3 bench/peer_dataloader.py "$tree" --workers 1 --batch "$batch" --epochs "$epochs" | j "['images_per_sec']")
folder=$(taskset -c 0 bin/faster bench load "$tree" --workers 1 --batch "$batch" --epochs "$epochs" --json)
packed=$(taskset -c 0 bin/faster bench load "$shards" --workers 1 --batch "$batch" --epochs "$epochs" --json)
fr=$(echo "$folder" | j "['images_per_sec']"); fb=$(echo "$folder" | j "['bottleneck']"); fm=$(echo "$folder" | j "['mb_per_sec']")
pr=$(echo "$packed" | j "['images_per_sec']"); pb=$(echo "$packed" | j "['bottleneck']"); pm=$(echo "$packed" | j "['mb_per_sec']")
slow=$(/usr/bin/python3 -c "print(round($fr/3))")
cons=$(taskset -c 0 bin/faster bench load "$tree" --workers 1 --batch "$batch" --epochs 1 --consumer-rate "$slow" --json)
cr=$(echo "$cons" | j "['images_per_sec']"); cb=$(echo "$cons" | j "['bottleneck']")

echo "ImageFolder of $(find "$tree" -name '*.JPEG' | wc -l) real photographs (shorter edge 300-500), train transform, batch $batch, 1 worker, one core:"
echo
printf "| loader                                   | images/s | MB/s  | bottleneck | vs torchvision |\n"
printf "|------------------------------------------|----------|-------|------------|----------------|\n"
printf "| torchvision ImageFolder + DataLoader     | %8.0f |       |            | 1.00x          |\n" "$peer"
printf "| faster, ImageFolder                      | %8.0f | %5.1f | %-10s | %.2fx          |\n" "$fr" "$fm" "$fb" "$(/usr/bin/python3 -c "print($fr/$peer)")"
printf "| faster, packed shards                    | %8.0f | %5.1f | %-10s | %.2fx          |\n" "$pr" "$pm" "$pb" "$(/usr/bin/python3 -c "print($pr/$peer)")"
printf "| faster, ImageFolder, consumer at %5s/s | %8.0f |       | %-10s |                |\n" "$slow" "$cr" "$cb"
