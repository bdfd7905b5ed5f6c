#!/usr/bin/env bash
# FixRes on photographs: the same schedule trained at 224, 128 and 160 and
# tested at 224, with and without the test-resolution adjustment of the
# BatchNorm statistics (--fixres-bn: N batches of the training images at
# the test side under the test recipe, swa_utils.update_bn's cumulative
# average), in faster (Go engine on oneDNN, `faster train`) and in PyTorch
# 1.13 (bench/peer_fixres_torch.py: torchvision's RandomResizedCrop + flip,
# Resize(256) + CenterCrop(224), update_bn), the same narrow ResNet-18,
# hyper-parameters and threads, each pinned to the same CPUs; prints a
# markdown table of the seconds (training, plus the recalibration where
# adjusted; evaluation excluded) and the test accuracy.
#
# The data: an ImageFolder of crops of real photographs (bench/imagenet_like.py,
# Debian's mate-backgrounds, ImageNet-sized JPEGs), class c the crops of
# photograph c, the train and test trees from different seeds. Each train
# side is trained once per engine: the 128 and 160 runs report the test
# accuracy before the adjustment (rows b and "160, none") and after it
# (rows c, d) of the same trained weights.
#
#   bench/run_fixres.sh
#   env: CLASSES (10), PER_CLASS (24 training images), TEST_PER_CLASS (10),
#        EPOCHS (3), BATCH (16), LR (0.1, the one-cycle peak),
#        FILTERS (8,16,32,64: ResNet-18's stage widths), FIXRES_BN (8
#        batches), SIDES (224 128 160), TEST_RES (224), THREADS (2),
#        CPUS (0-1: taskset), SEED (1), OUT (/tmp/faster-fixres),
#        TABLE_ONLY (0; 1: print the table of the runs already in OUT)
#
# About 14 minutes on 2 cores at load average 12-25 (the other runs of a
# shared machine); the accuracies on 100 test images move by 1% per image.
set -euo pipefail
cd "$(dirname "$0")/.."
CLASSES=${CLASSES:-10}
PER_CLASS=${PER_CLASS:-24}
TEST_PER_CLASS=${TEST_PER_CLASS:-10}
EPOCHS=${EPOCHS:-3}
BATCH=${BATCH:-16}
LR=${LR:-0.1}
FILTERS=${FILTERS:-8,16,32,64}
FIXRES_BN=${FIXRES_BN:-8}
SIDES=${SIDES:-224 128 160}
TEST_RES=${TEST_RES:-224}
THREADS=${THREADS:-2}
CPUS=${CPUS:-0-1}
SEED=${SEED:-1}
OUT=${OUT:-/tmp/faster-fixres}
PY=${PY:-/usr/bin/python3}
data=$OUT/photos-$CLASSES-$PER_CLASS-$TEST_PER_CLASS
mkdir -p "$OUT"
start=$(date +%s)
if [ "${TABLE_ONLY:-0}" != 1 ]; then
echo "FixRes on photographs: $CLASSES classes x $PER_CLASS train / $TEST_PER_CLASS test, ResNet-18 widths $FILTERS, batch $BATCH, $EPOCHS epochs, one-cycle lr $LR, test at $TEST_RES, --fixres-bn $FIXRES_BN, $THREADS threads on CPUs $CPUS; load: $(cut -d' ' -f1-3 /proc/loadavg)" >&2
$PY bench/imagenet_like.py "$data/train" --classes "$CLASSES" --per-class "$PER_CLASS" --seed 1
$PY bench/imagenet_like.py "$data/test" --classes "$CLASSES" --per-class "$TEST_PER_CLASS" --seed 2
go build -o bin/faster ./cmd/faster
pin=()
if command -v taskset >/dev/null; then pin=(taskset -c "$CPUS"); fi
common=(--data "$data/train" --test-data "$data/test" --model resnet18 --filters "$FILTERS" --resolution "$TEST_RES"
  --batch "$BATCH" --epochs "$EPOCHS" --lr "$LR" --schedule onecycle --weight-decay 5e-4 --nesterov --label-smoothing 0.1
  --threads "$THREADS" --seed "$SEED")
for side in $SIDES; do
  fix=()
  if [ "$side" != "$TEST_RES" ]; then fix=(--fixres-bn "$FIXRES_BN"); fi
  echo "train $side, test $TEST_RES ${fix[*]}: faster ($(cut -d' ' -f1 /proc/loadavg))" >&2
  "${pin[@]}" bin/faster train "${common[@]}" --resolution-schedule "$side" "${fix[@]}" --json >"$OUT/ours-$side.json"
  echo "train $side, test $TEST_RES ${fix[*]}: PyTorch ($(cut -d' ' -f1 /proc/loadavg))" >&2
  "${pin[@]}" $PY bench/peer_fixres_torch.py "${common[@]}" --resolution-schedule "$side" "${fix[@]}" >"$OUT/torch-$side.json"
done
echo "done in $(( $(date +%s) - start )) s; load: $(cut -d' ' -f1-3 /proc/loadavg)" >&2
fi
$PY - "$OUT" "$TEST_RES" $SIDES <<'EOF'
import json, os, sys
out, test, sides = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
print("| config | train → test side | BN statistics | ours s | ours test acc (loss) | PyTorch s | PyTorch test acc (loss) | PyTorch s / ours s |")
print("|---|---|---|---|---|---|---|---|")
for side in sides:
    o = json.load(open(os.path.join(out, "ours-%s.json" % side)))
    p = json.load(open(os.path.join(out, "torch-%s.json" % side)))
    rows = []
    if "fixres_bn" in o:
        fo, fp = o["fixres_bn"], p["fixres_bn"]
        rows.append(("as trained", o["seconds"], fo["test_accuracy_before"], fo["test_loss_before"],
                     p["seconds"], fp["test_accuracy_before"], fp["test_loss_before"]))
        rows.append(("recomputed at %d (%d batches)" % (fo["resolution"], fo["batches"]), o["seconds"] + fo["seconds"],
                     o["test_accuracy"], o["test_loss"], p["seconds"] + fp["seconds"], p["test_accuracy"], p["test_loss"]))
    else:
        rows.append(("as trained", o["seconds"], o["test_accuracy"], o["test_loss"], p["seconds"], p["test_accuracy"], p["test_loss"]))
    names = {"224": ["a"], "128": ["b", "c"], "160": ["160, none", "d"]}.get(side, [side] * len(rows))
    for name, (bn, os_, oa, ol, ps, pa, pl) in zip(names, rows):
        print("| %s | %s → %d | %s | %.1f | %.1f%% (%.3f) | %.1f | %.1f%% (%.3f) | %.2f |" % (name, side, test, bn, os_, 100 * oa, ol, ps, 100 * pa, pl, ps / os_))
EOF
