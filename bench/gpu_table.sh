#!/usr/bin/env bash
# gpu_table.sh: issue 37 §3's table on the H200, ours beside PyTorch in one
# script. PREPARED, NOT YET RUN on a GPU (written without one; its dry run,
# DRY=1 below, ran here on the CPU).
#
# It builds nothing on the GPU machine (no Go there). Where Go is:
#   bash bench/gpu_table.sh build
# writes out/gpu/ (git-ignored): faster.gz (bin/faster built with cgo for
# the cuda backend's dlopen, libjpeg-turbo static; gzipped to fit a device
# call's 64 MiB), fashion-mnist/ (the IDX .gz files) and lib/ (libgloo and
# its libraries, when the build links Gloo: -tags faster_noonednn where
# the tree has it, for the ddp row; else faster_serveonly and ddp cells
# fail, each saying so). On the GPU machine, carrying out/gpu:
#   bash bench/gpu_table.sh
# runs, each cell a fresh process under its own timeout (CELL_TIMEOUT,
# 90 s), each failing alone (its error printed, the rest go on), the whole
# under BUDGET seconds (420; cells past it are skipped, said so):
#   1. ThinNet, batch 512, synthetic 3×32×32 (bench/synthetic_cifar.py,
#      50,000 + 10,000 made there; ours reads them through the loader's
#      train recipe, the peer from GPU-resident tensors), EPOCHS_SYN (2)
#      epochs: rows single / dp / ddp × columns plain / +autotune / +AMP
#      (fp16 + GradScaler, the study's) / both; ours is `faster bench
#      train --device cuda` one cell at a time, the peer
#      bench/peer_thinnet_torch.py --device cuda (cudnn.benchmark for
#      autotune; dp: two replicas on their own streams; ddp: two processes
#      sharing the GPU over gloo); and a row single+graph: ours with
#      --cuda-graph (each step a replayed CUDA graph) beside the peer's
#      single cells.
#   2. The same on Fashion-MNIST for accuracy, EPOCHS_FM (5) epochs,
#      ROWS_FM (single) rows.
#   3. ResNet-18 at 224, batch 256, bf16, 2 epochs: the peer on synthetic
#      GPU-resident batches (2,560), ours on 2,560 generated JPEGs decoded
#      on the GPU (the default of `faster train --device cuda`: the
#      batches stay in device memory), the same with --channels-last
#      (the peer runs channels_last) and, beside it, on the CPU loader
#      (--decode-device cpu: its batches as bytes, normalised on the GPU;
#      and as floats, --layout f32-chw).
# Cell JSON goes to $OUT/cells (or /tmp/gpu_table/cells); the table is
# printed last (bench/gpu_table.py) and written as $OUT/cells/table.json.
# The two-GPU speed-ups wait for a machine with several GPUs: dp and ddp
# here share one.
#
# Dry run, here: DRY=1 bash bench/gpu_table.sh runs the same cells on the
# cpu at toy sizes with bin/faster (FASTER_BIN) and Debian's python3: the
# peer's dp cells fail (--dp needs cuda), which shows a failing cell.
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root" || exit 2
gpu=$root/out/gpu

if [ "${1:-}" = build ]; then
	mkdir -p "$gpu/lib" "$gpu/fashion-mnist"
	tags=faster_serveonly,faster_static
	if grep -qs faster_noonednn train/onednn/*.go; then
		tags=faster_noonednn,faster_static
		for l in libgloo.so.0 libhiredis.so.0.14 libibverbs.so.1 libnl-route-3.so.200 libnl-3.so.200; do
			p=$(ldconfig -p | awk -v l="$l" '$1 == l {print $NF; exit}')
			[ -n "$p" ] && cp -L "$p" "$gpu/lib/$l"
		done
	fi
	CGO_ENABLED=1 go build -tags "$tags" -ldflags='-s -w' -o "$gpu/faster" ./cmd/faster || exit 1
	gzip -9f "$gpu/faster"
	cp /usr/share/datasets/fashion-mnist/*.gz "$gpu/fashion-mnist/" 2>/dev/null || echo "gpu_table: no Fashion-MNIST here: its cells will fail"
	echo "built with -tags $tags:"; du -sh "$gpu"/*
	exit 0
fi

start=$(date +%s)
out=${OUT:-/tmp/gpu_table}
cells=$out/cells
work=${WORK:-/tmp/gpu_table_work}
mkdir -p "$cells" "$work"
py=${PYTHON:-python3}
dry=${DRY:-}
if [ -n "$dry" ]; then
	device=cpu bin=${FASTER_BIN:-$root/bin/faster}
	[ -x "$bin" ] || { echo "gpu_table: $bin missing: go build -o bin/faster ./cmd/faster"; exit 2; }
	py=${PYTHON:-/usr/bin/python3}
	n_syn=${N_SYN:-512} n_test=256 limit_fm=512 epochs_syn=1 epochs_fm=${EPOCHS_FM:-1} batch=64 filters="--filters 4,8"
	n_res=64 res=32 res_batch=32 peer_cuda=""
else
	device=cuda bin=$work/faster
	[ -f "$gpu/faster.gz" ] || { echo "gpu_table: $gpu/faster.gz missing: run 'bash bench/gpu_table.sh build' where Go is, and carry out/gpu"; exit 2; }
	gunzip -c "$gpu/faster.gz" >"$work/faster.bin" && chmod +x "$work/faster.bin"
	# Gloo's carried libraries for faster alone (a wrapper): exported, they
	# would stand before the machine's own for torch and NCCL.
	printf '#!/bin/sh\nLD_LIBRARY_PATH=%s${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} exec %s "$@"\n' "$gpu/lib" "$work/faster.bin" >"$bin"
	chmod +x "$bin"
	n_syn=50000 n_test=10000 limit_fm=0 epochs_syn=${EPOCHS_SYN:-2} epochs_fm=${EPOCHS_FM:-5} batch=512 filters=""
	n_res=2560 res=224 res_batch=256 peer_cuda="--cudnn-benchmark"
	nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null || echo "(no nvidia-smi)"
fi
budget=${BUDGET:-420}
timeout_s=${CELL_TIMEOUT:-90}
rows_fm=${ROWS_FM-single} # ROWS_SYN and ROWS_FM: the rows to run ("": none)
lr=${LR:-0.01}

# The data, made here (the synthetic sets) or carried (Fashion-MNIST).
syn=$work/synthetic32-$n_syn # keyed by size: a dry run and a real one share $work
[ -f "$syn/test_batch" ] || $py bench/synthetic_cifar.py "$syn" --train "$n_syn" --test "$n_test" || echo "gpu_table: no synthetic data"
fm=${FMNIST:-$gpu/fashion-mnist}
[ -n "$dry" ] && fm=${FMNIST:-/usr/share/datasets/fashion-mnist}
photos=$work/photos-$res-$n_res
photo() { # DIR N SIDE: N noise JPEGs of 10 classes, a little larger than SIDE
	$py - "$@" <<'EOF' || echo "gpu_table: no photographs in $1"
import os, sys
import numpy as np
from PIL import Image
out, n, side = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
rng = np.random.default_rng(3)
for i in range(n):
    d = os.path.join(out, "c%d" % (i % 10))
    os.makedirs(d, exist_ok=True)
    px = rng.integers(0, 256, (side + side // 7, side + side // 7, 3), dtype=np.uint8)
    Image.fromarray(px).save(os.path.join(d, "%05d.jpg" % i), quality=90)
EOF
}
[ -d "$photos/train" ] || { photo "$photos/train" "$n_res" "$res"; photo "$photos/test" "$res_batch" "$res"; }

# cell NAME CMD...: runs one cell under its timeout into $cells/NAME.json,
# or NAME.err with its error; past the budget it is skipped.
cell() {
	local name=$1
	shift
	rm -f "$cells/$name.json" "$cells/$name.err"
	if [ $(($(date +%s) - start)) -ge "$budget" ]; then
		echo "skipped: over the budget of $budget s" >"$cells/$name.err"
		echo "$name: skipped (budget)"
		return
	fi
	local t0=$(date +%s)
	# Its stderr whole in $cells/NAME.log (under $OUT: it comes back).
	if timeout "$timeout_s" "$@" >"$work/$name.out" 2>"$cells/$name.log" && [ -s "$work/$name.out" ]; then
		mv "$work/$name.out" "$cells/$name.json"
		echo "$name: $(($(date +%s) - t0)) s"
	else
		local rc=$?
		{ tail -n 3 "$cells/$name.log"; echo "exit $rc after $(($(date +%s) - t0)) s"; } | tr '\n' ' ' >"$cells/$name.err"
		echo "$name: FAILED: $(cut -c1-300 "$cells/$name.err")"
	fi
}

port=29700
thinnet() { # data-name data-path epochs limit strategy variant
	local dn=$1 dp=$2 ep=$3 lim=$4 s=$5 v=$6
	local amp="" tune="" par=""
	case $v in *amp*) amp="--amp --amp-dtype fp16" ;; esac
	[ -n "$dry" ] && amp=${amp/fp16/bf16}
	case $v in *autotune*) tune=$peer_cuda ;; esac
	case $s in dp) par="--dp 2" ;; ddp) par="--ddp 2 --port $((port++))" ;; esac
	local strat=$s graph=""
	[ "$s" = single+graph ] && strat=single graph="--cuda-graph"
	local lim_o="" lim_p="" warm="--warmup=false"
	[ "$lim" -gt 0 ] && lim_o="--limit $lim --test-limit $lim" lim_p="--limit $lim --test-limit $lim"
	# bench train's warm-up (NVRTC's and cuDNN's first calls, untimed)
	# limits the images, which IDX data alone takes.
	[ "$dn" = fashion ] && warm="--warmup=true"
	# shellcheck disable=SC2086
	cell "ours.$dn.$s.$v" "$bin" bench train --device "$device" --data "$dp" --epochs "$ep" --batch "$batch" --lr "$lr" \
		--strategies "$strat" --variants "$v" --devices 2 --amp-dtype "$([ -n "$dry" ] && echo bf16 || echo fp16)" \
		--repeats 1 --ablation=false $warm --json $filters $lim_o $graph
	# The graph row is ours alone: the peer's single cell stands beside it.
	[ -n "$graph" ] && return
	# shellcheck disable=SC2086
	cell "torch.$dn.$s.$v" "$py" bench/peer_thinnet_torch.py --device "$device" --data "$dp" --epochs "$ep" --batch "$batch" \
		--lr "$lr" --momentum 0.9 $amp $tune $par $filters $lim_p
}

# ResNet-18 at 224 (the dry run: at 32), bf16: first, so that a budget
# cut by the ThinNet cells' start-ups does not lose the row.
amp_res="--amp --amp-dtype bf16"
cell "torch.synthetic-gpu.resnet18.bf16" "$py" bench/peer_thinnet_torch.py --device "$device" --model resnet18 --synthetic "$n_res" \
	--resolution "$res" --batch "$res_batch" --epochs 2 --lr 0.1 $amp_res $peer_cuda
cell "ours.jpeg-gpu-decode.resnet18.bf16" "$bin" train --device "$device" --model resnet18 --data "$photos/train" --test-data "$photos/test" \
	--resolution "$res" --batch "$res_batch" --epochs 2 --lr 0.1 $amp_res --json
cell "ours.jpeg-gpu-decode-nhwc.resnet18.bf16" "$bin" train --device "$device" --model resnet18 --data "$photos/train" --test-data "$photos/test" \
	--resolution "$res" --batch "$res_batch" --epochs 2 --lr 0.1 $amp_res --channels-last --json
cell "ours.jpeg-cpu-decode.resnet18.bf16" "$bin" train --device "$device" --decode-device cpu --model resnet18 --data "$photos/train" --test-data "$photos/test" \
	--resolution "$res" --batch "$res_batch" --epochs 2 --lr 0.1 $amp_res --json
# The same fed floats (--layout f32-chw): what the bytes above save.
cell "ours.jpeg-cpu-decode-f32.resnet18.bf16" "$bin" train --device "$device" --decode-device cpu --layout f32-chw --model resnet18 --data "$photos/train" --test-data "$photos/test" \
	--resolution "$res" --batch "$res_batch" --epochs 2 --lr 0.1 $amp_res --json

# single+graph: ours with --cuda-graph, beside the peer's single cells
# (not in the dry run: the cpu has no step capture).
graph_row=single+graph
[ -n "$dry" ] && graph_row=""
for s in ${ROWS_SYN-single $graph_row dp ddp}; do
	for v in plain autotune amp autotune+amp; do
		thinnet synthetic32 "$syn" "$epochs_syn" 0 "$s" "$v"
	done
done
for s in ${rows_fm//,/ }; do
	for v in plain autotune amp autotune+amp; do
		thinnet fashion "$fm" "$epochs_fm" "$limit_fm" "$s" "$v"
	done
done
# Each step's floor beside the cells (issue 37: "count its FLOPs and
# bytes and write the floor beside the figure"): the models' FLOPs at the
# GPU's dense peak and their bytes at its bandwidth (bench/gpu_where.py).
fspec=""
[ -n "$dry" ] && fspec=":4,8"
# Within the budget: past it, at most 30 s more.
left=$((budget - ($(date +%s) - start)))
[ "$left" -lt 30 ] && left=30
[ "$left" -gt 120 ] && left=120
timeout "$left" "$py" bench/gpu_where.py --device "$device" --floors "$cells/floors.json" --case "synthetic32=thinnet:3:32:$batch:10$fspec" \
	--case "fashion=thinnet:1:28:$batch:10$fspec" --case "resnet18=resnet18:3:$res:$res_batch:10" || echo "gpu_table: no floors"

echo "== $(($(date +%s) - start)) s in all"
$py bench/gpu_table.py "$cells"
