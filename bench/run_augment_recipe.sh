#!/usr/bin/env bash
# CPU seconds per 1,000 images on one core (taskset -c 0): torchvision's
# reference train preset with TrivialAugmentWide + RandomErasing (the v2
# recipe's input: RandomResizedCrop(224, BILINEAR), flip, TrivialAugmentWide
# (BILINEAR), PILToTensor, ConvertImageDtype, Normalize, RandomErasing(0.1)),
# the same Compose handed to torchvision's ImageFolder + DataLoader and to
# faster.Loader (bench/serve_loop.py --recipe ta-wide-erasing), and
# `faster bench load --augment-recipe torchvision-v2` (the pipeline alone);
# the plain recipe's figures beside them; in the same run, loaders taking
# turns, each keeping its lowest CPU per image over ROUNDS.
# Usage: bench/run_augment_recipe.sh [EPOCHS] [BATCH] [ROUNDS]
set -euo pipefail
cd "$(dirname "$0")/.."
epochs=${1:-1}
batch=${2:-64}
rounds=${3:-2}
export PATH=/usr/local/go/bin:$PATH
go build -o bin/faster ./cmd/faster
tree=$(/usr/bin/python3 bench/imagefolder.py "${FASTER_IMAGEFOLDER:-/tmp/faster-imagefolder}" 10 50)
export PYTHONPATH=python FASTER_BIN=bin/faster
c() { /usr/bin/python3 -c "import json,sys; print(json.load(sys.stdin)['cpu_seconds_per_1000_images'])"; }
py() { /usr/bin/python3 -c "print($1)"; }
loop() { taskset -c 0 /usr/bin/python3 bench/serve_loop.py "$tree" --loader "$1" --workers 1 --batch "$batch" --epochs "$epochs" --recipe "$2" | c; }
load() { taskset -c 0 bin/faster bench load "$tree" --workers 1 --batch "$batch" --epochs "$epochs" --json "$@" | c; }
echo "ImageFolder of $(find "$tree" -name '*.JPEG' | wc -l) real photographs, train at 224, batch $batch, $epochs epoch(s), one core, lowest of $rounds turns:"
echo
printf "| recipe | loader | CPU s / 1000 images | torchvision / this |\n|---|---|---|---|\n"
for recipe in ta-wide-erasing plain; do
  tv=1e9; fl=1e9; bl=1e9
  if [ $recipe = plain ]; then flags=(); else flags=(--augment-recipe torchvision-v2); fi
  for _ in $(seq "$rounds"); do
    tv=$(py "min($tv, $(loop torchvision $recipe))")
    fl=$(py "min($fl, $(loop faster $recipe))")
    bl=$(py "min($bl, $(load "${flags[@]}"))")
  done
  row() { printf "| %s | %s | %.2f | %.2fx |\n" "$recipe" "$1" "$2" "$(py "$tv/$2")"; }
  row "torchvision ImageFolder + DataLoader (num_workers=1)" "$tv"
  row "faster.Loader (the same Compose)" "$fl"
  row "faster bench load ${flags[*]:-}" "$bl"
done
