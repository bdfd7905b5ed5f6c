#!/usr/bin/env bash
# Runs the decode + RandomResizedCrop(224) + flip + normalise comparison in
# one go, one core each: torchvision+PIL (bench/peer_torchvision.py) and
# faster's Go path (augment's BenchmarkDecodeTrain), on the same photos,
# plus the Go-vs-C kernel benchmark. Usage: bench/run_augment.sh [seconds]
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-10}
export FASTER_PHOTOS=${FASTER_PHOTOS:-/tmp/faster-photos}
/usr/bin/python3 bench/photos.py >/dev/null
echo "== torchvision+PIL (1 thread)"
taskset -c 0 /usr/bin/python3 bench/peer_torchvision.py --seconds "$secs" "$FASTER_PHOTOS"
echo "== faster (GOMAXPROCS=1)"
GOMAXPROCS=1 taskset -c 0 go test ./augment -run '^$' -bench 'DecodeTrain|TrainTransform|KernelVsC' \
  -benchtime "${secs}s"
