#!/usr/bin/env bash
# The seed's "Data Loading" table on simulated storage: the kernel's
# block-IO throttle (faster bench storage) makes the data disk an HDD (150
# reads/s, 120 MB/s) or a SATA SSD (20,000 reads/s, 500 MB/s); the dataset
# is evicted from the page cache before every run. Rows: an ImageNet-shaped
# ImageFolder of real photographs (bench/imagenet_like.py), the same images
# packed into shards (streaming, and global shuffle by index) and into
# WebDataset tars, and a Caffe LMDB written by Python's lmdb. Columns:
# torchvision's ImageFolder + DataLoader (the peer, train transform, shuffle
# on; it reads ImageFolder trees only), faster bench load, and faster.Loader
# into a torch loop (ImageFolder, through faster serve). One worker, one core
# for each loader (taskset), batch 64, one epoch. Needs root.
# Usage: bench/run_storage.sh [CLASSES] [CLASSES_N] [PER_CLASS]
set -euo pipefail
cd "$(dirname "$0")/.."
classes=${1:-hdd,ssd}
ncls=${2:-20}
per=${3:-40}
export PATH=/usr/local/go/bin:$PATH
go build -o bin/faster ./cmd/faster
root=${FASTER_STORAGE_DIR:-/var/tmp/faster-storage}
tree=$root/tree
/usr/bin/python3 bench/imagenet_like.py "$tree" --classes "$ncls" --per-class "$per"
[ -f "$root/shards/manifest.json" ] || bin/faster pack "$tree" "$root/shards" --shards 16 >/dev/null
[ -f "$root/wds/manifest.json" ] || bin/faster pack "$tree" "$root/wds" --shards 16 --format wds >/dev/null
[ -d "$root/lmdb" ] || /usr/bin/python3 cmd/faster/testdata/write_formats.py "$tree" "$root/py.tar" "$root/lmdb" "$root/lmdb-raw" >/dev/null
rows=(imagefolder="$tree" shards="$root/shards" shards-global="$root/shards,--global-shuffle" wds="$root/wds" lmdb="$root/lmdb")
export PYTHONPATH=$PWD/python FASTER_BIN=$PWD/bin/faster
taskset -c 0 bin/faster bench storage "${rows[@]}" --class "$classes" --workers 1 --batch 64 --epochs 1 \
  --engine "torchvision DataLoader@imagefolder=/usr/bin/python3 bench/peer_dataloader.py {path} --workers {workers} --batch {batch} --epochs {epochs}" \
  --engine "faster=" \
  --engine "faster.Loader (torch loop)@imagefolder=/usr/bin/python3 bench/serve_loop.py --loader faster {path} --workers {workers} --batch {batch} --epochs {epochs}" \
  "${@:4}"
