#!/usr/bin/env bash
# Time to accuracy on Fashion-MNIST: `faster bench train --target-accuracy`
# trains the same narrow ThinNet with the same fast recipe (one-cycle rate,
# label smoothing 0.1, Nesterov, progressive resizing 20→28, EMA with
# warm-up, flip TTA) in faster (Go engine on oneDNN) and in PyTorch 1.13
# (bench/peer_thinnet_torch.py) from the same starting weights and in the
# same sample order (ours'), alternating which goes first, each pinned
# to the same cores, and prints the seconds of training (evaluation
# excluded) until the test accuracy first reaches TARGET, and the ratio.
#
#   bench/run_time_to_accuracy.sh [DATA]
#   env: TARGET (0.82), EVAL_EVERY (94 steps), EPOCHS (2: the one-cycle
#        length; training stops at the target), BATCH (128), LR (0.2, the
#        one-cycle peak), FILTERS (8,16,32), THREADS (2), CPUS (0-1: taskset),
#        SEED (1), ROUNDS (2), ABLATION (0; 1 adds ours without each part),
#        NO_PEER (0; 1: ours only), WINOGRAD (1: ours with Winograd
#        convolutions, its default; 0: direct, --winograd=false; the peer
#        keeps its own convolution algorithm), OURS_DDP (0; N: ours
#        as N DDP processes of THREADS/N threads, the peer one process),
#        SAME_START (1: the peer starts from ours' initial weights and
#        takes the images in ours' order; 0: each engine draws its own
#        from SEED), OUT (/tmp/faster-tta: tta.json, tta.png)
set -euo pipefail
cd "$(dirname "$0")/.."
DATA=${1:-/usr/share/datasets/fashion-mnist}
TARGET=${TARGET:-0.82}
EVAL_EVERY=${EVAL_EVERY:-94}
EPOCHS=${EPOCHS:-2}
BATCH=${BATCH:-128}
LR=${LR:-0.2}
FILTERS=${FILTERS:-8,16,32}
THREADS=${THREADS:-2}
CPUS=${CPUS:-0-1}
SEED=${SEED:-1}
ROUNDS=${ROUNDS:-2}
ABLATION=${ABLATION:-0}
OUT=${OUT:-/tmp/faster-tta}
mkdir -p "$OUT"
go build -o bin/faster ./cmd/faster
extra=()
if [ "$ABLATION" = 1 ]; then extra+=(--recipe-ablation); fi
if [ "${NO_PEER:-0}" = 1 ]; then extra+=(--no-peer); fi
if [ "${WINOGRAD:-1}" = 0 ]; then extra+=(--winograd=false); fi
if [ "${OURS_DDP:-0}" != 0 ]; then extra+=(--ours-ddp "$OURS_DDP"); fi
if [ "${SAME_START:-1}" = 0 ]; then extra+=(--same-start=false); fi
echo "time to accuracy: target $TARGET, ThinNet $FILTERS, batch $BATCH, lr $LR, $EPOCHS epochs, $THREADS threads on CPUs $CPUS, seed $SEED; load: $(cut -d' ' -f1-3 /proc/loadavg)" >&2
taskset -c "$CPUS" bin/faster bench train --data "$DATA" --target-accuracy "$TARGET" --eval-every "$EVAL_EVERY" \
  --recipe fast --lr "$LR" --epochs "$EPOCHS" --batch "$BATCH" --filters "$FILTERS" --threads "$THREADS" \
  --seed "$SEED" --rounds "$ROUNDS" --curve "$OUT/tta.json" --plot "$OUT/tta.png" "${extra[@]}"
