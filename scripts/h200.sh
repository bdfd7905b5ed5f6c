#!/usr/bin/env bash
# h200.sh: everything the GPU machine is for, in as few device calls as
# its quarter of an hour allows. PREPARED: its `build` part runs here; the
# rest waits for a session that is lent the machine (docs/benchmarks.md, "On the GPU machine").
#
# Here (Go, gcc, no GPU), from the repository root:
#   bash scripts/h200.sh build
# runs the build modes of the prepared GPU scripts (train/cuda/gpucheck.sh:
# the kernels' and the backend's test binary; gpudecode/gpucheck.sh: the
# nvJPEG stage's test binaries, photographs and odd JPEGs;
# bench/gpu_table.sh: bin/faster with the cuda backend and Gloo, no
# oneDNN, Fashion-MNIST, Gloo's libraries), adds the serve package's test
# binary (the Python tests, with FASTER_TEST_BIN: no Go there), and packs
# them, xz-compressed, as two carries that each fit one call's 64 MiB:
#   out/gpu-check/carry.tar.xz   what `check` needs
#   out/gpu-bench/carry.tar.xz   what `bench` needs
# There, one device call each, timeout 600 (a session has 15 minutes of
# device time, a start costing 1-2: a first session runs `first`, then
# what time is left allows):
#   carry ["out/gpu-check"]: bash scripts/h200.sh first   # <10 min: the
#       cuda probe, the backend's device check, the table's single and
#       single+graph rows and the ResNet-18 row beside PyTorch
#   carry ["out/gpu-check"]: bash scripts/h200.sh check   # ~6 min: headers
#       probes, kernels and backend against their CPU builds, traintest on
#       cuda, the nvJPEG stage's pixels and rate, the Python tests on torch
#       2.11 / Python 3.12
#   carry ["out/gpu-bench"]: bash scripts/h200.sh bench   # ~8 min: issue
#       37's table beside PyTorch, issue 38's worker scaling beside
#       torchvision, the pinned copy
#   carry ["out/gpu-bench"]: bash scripts/h200.sh feed    # ~5 min: issue
#       38 §2's goal: ResNet-18/50 (bf16, channels_last, batch 256) in
#       PyTorch fed by faster.Loader(device="cuda"), by its pinned ring and
#       by torchvision's DataLoader, each beside GPU-resident batches
#       (bench/gpu_feed.py); the GPU stage's rate on 4 cores; where
#       PyTorch's step time goes and its floor (bench/gpu_where.py); bench
#       storage with its GPU column (§5)
# Each part's log goes under $OUT; each prints a short table last, and a
# part that fails is reported and the next one runs. Every part ends by
# DEADLINE seconds (570) after the script began, so the call's 600 s
# never cut the summary: a part past it is skipped, said so.
# After `first` in the same session, `AFTER_FIRST=1 bash scripts/h200.sh
# check` leaves out what `first` ran (the cuda probe and gpucheck).
set -u
began=$(date +%s)
deadline=$((began + ${DEADLINE:-570}))
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root" || exit 2
gpu=$root/out/gpu

# sources.sha256: the hashes of the tracked sources (Go, C, CUDA, shell,
# Python) the carry was built from; unpack checks the tree the GPU machine
# got (the working tree, without .git) against them, so binaries built
# from another tree are named, with the files that differ, before they
# waste the call.

pack() { # name files...: out/gpu-NAME/carry.tar.xz of those paths under out/gpu
	local name=$1
	shift
	mkdir -p "$root/out/gpu-$name"
	tar -C "$gpu" -cf - "$@" | xz -T2 -6 >"$root/out/gpu-$name/carry.tar.xz.tmp" || return 1
	mv "$root/out/gpu-$name/carry.tar.xz.tmp" "$root/out/gpu-$name/carry.tar.xz"
	ls -l "$root/out/gpu-$name/carry.tar.xz"
}

build() {
	set -e
	rm -rf "$gpu"
	bash train/cuda/gpucheck.sh build
	bash gpudecode/gpucheck.sh build
	bash bench/gpu_table.sh build
	go test -c -tags faster_static,faster_noonednn -ldflags '-s -w' -o "$gpu/serve.test" ./serve
	# Shared libraries beyond the C library's and the carried lib/'s would
	# be missing there (Ubuntu 24.04: no libjpeg.so.62, no oneDNN).
	for b in cuda.test gpudecode.test nvjpeg.test serve.test; do
		if ldd "$gpu/$b" | grep -vE 'linux-vdso|ld-linux|lib(c|m|pthread|dl|rt|gcc_s|stdc\+\+)\.so' | grep -q '=>'; then
			echo "h200: $b needs shared libraries the GPU machine may not have:"; ldd "$gpu/$b"; exit 1
		fi
	done
	git ls-files -z -- '*.go' '*.c' '*.h' '*.cu' '*.sh' '*.py' | xargs -0 sha256sum >"$gpu/sources.sha256"
	pack check cuda.test gpudecode.test nvjpeg.test photos testdata serve.test faster.gz lib sources.sha256
	pack bench faster.gz lib fashion-mnist photos sources.sha256
	rm -rf "$gpu"
}

unpack() { # name: out/gpu-NAME's carry into out/gpu, bin/faster from it
	local c=$root/out/gpu-$1/carry.tar.xz
	[ -f "$c" ] || { echo "h200: $c missing: run 'bash scripts/h200.sh build' where Go is, carry out/gpu-$1"; exit 2; }
	mkdir -p "$gpu" "$root/bin"
	if command -v xz >/dev/null; then
		xz -dc "$c" | tar -C "$gpu" -xf - || exit 2
	else # Python's lzma where the machine has no xz
		python3 -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' "$c" "$gpu" || exit 2
	fi
	local differ
	differ=$(sha256sum -c --quiet "$gpu/sources.sha256" 2>&1 | head -5)
	if [ -n "$differ" ]; then
		echo "h200: WARNING: the carry was built from another tree (rebuild it); first files that differ:"
		echo "$differ"
	fi
	gunzip -c "$gpu/faster.gz" >"$gpu/faster.bin" && chmod +x "$gpu/faster.bin"
	# Gloo's carried libraries for faster alone: exported, they would stand
	# before the machine's own for torch, NCCL and the test binaries.
	printf '#!/bin/sh\nLD_LIBRARY_PATH=%s${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} exec %s "$@"\n' "$gpu/lib" "$gpu/faster.bin" >"$root/bin/faster"
	chmod +x "$root/bin/faster"
	export FASTER_BIN=$root/bin/faster FASTER_TEST_BIN=$root/bin/faster PHOTOS=$gpu/photos PYTHONPATH=$root/python
	FASTER_PYTHON=$(command -v python3)
	export FASTER_PYTHON
	export OUT=${OUT:-/tmp/h200-out}
	mkdir -p "$OUT"
}

part() { # name command...: runs one part, its output in $OUT/NAME.log, its tail shown
	local name=$1
	shift
	local start rc left
	start=$(date +%s)
	# Within the script's deadline, and CAP seconds when set.
	left=$((deadline - start))
	[ -n "${CAP:-}" ] && [ "$CAP" -lt "$left" ] && left=$CAP
	if [ "$left" -lt 15 ]; then
		printf '== %-14s skipped: %ss left before the deadline\n' "$name" "$((deadline - start))"
		echo "$name skipped" >>"$OUT/parts.txt"
		return
	fi
	timeout -k 5 "$left" "$@" >"$OUT/$name.log" 2>&1
	rc=$?
	printf '== %-14s exit %-3s %4ss  (log %s)\n' "$name" "$rc" "$(($(date +%s) - start))" "$OUT/$name.log"
	echo "$name $rc" >>"$OUT/parts.txt"
	tail -n "${TAIL:-25}" "$OUT/$name.log" | cut -c1-220
}

check() {
	unpack check
	{
		nvidia-smi --query-gpu=name,driver_version,memory.total,memory.used --format=csv,noheader
		env | grep -E '^(LD_LIBRARY_PATH|CUDA|PATH)=' | cut -c1-300
		ldconfig -p | grep -E 'libcu|libnv|libcudnn|libnccl' | cut -c1-160
		python3 -c 'import torch, torchvision, sys; print(sys.version.split()[0], torch.__version__, torchvision.__version__, torch.cuda.is_available())'
		"$FASTER_BIN" --version
	} >"$OUT/env.txt" 2>&1
	cat "$OUT/env.txt" | head -40
	# What `first` did not run first (the nvJPEG probe, the stage, the
	# Python tests), then the cuda probe and gpucheck, which `first` ran
	# (left out with AFTER_FIRST=1).
	TAIL=12 part probe-nvjpeg bash gpudecode/nvjpeg/probe/probe.sh
	TAIL=25 part gpudecode bash gpudecode/gpucheck.sh
	# faster.Loader(device="cuda"): batches as torch CUDA tensors over CUDA IPC.
	TAIL=20 part device-loader bash -c "set -o pipefail; cd serve && FASTER_PY_K=DeviceLoader FASTER_REQUIRE_GPU=1 timeout 180 '$gpu/serve.test' -test.run '^TestPython$' -test.v 2>&1 | grep -E '^(=== RUN|--- |ok|FAIL|PASS)|Ran |OK|FAILED|Error|skipped'"
	# The Python tests on torch 2.11 / Python 3.12 (issue 38 §4): the serve
	# package's TestPython drives python/tests with the machine's python3,
	# its output as it comes in $OUT/python-full.log (FASTER_PY_LOG).
	# Photographs where the tests look for them (testenv.PhotoDir): a bare
	# machine has no mate-backgrounds.
	if [ ! -d /usr/share/backgrounds/mate/nature ]; then
		mkdir -p /usr/share/backgrounds/mate/nature && cp "$gpu"/photos/*.jpg /usr/share/backgrounds/mate/nature/
	fi
	TAIL=20 part python bash -c "set -o pipefail; cd serve && FASTER_PY_LOG='$OUT/python-full.log' timeout 240 '$gpu/serve.test' -test.run 'TestPython' -test.v 2>&1 | grep -E '^(=== RUN|--- |ok|FAIL|PASS)|Ran |OK|FAILED|Error'"
	if [ -z "${AFTER_FIRST:-}" ]; then
		TAIL=12 part probe bash train/cuda/probe/probe.sh
		TAIL=40 part gpucheck bash train/cuda/gpucheck.sh
	fi
	echo "== parts"; cat "$OUT/parts.txt"
}

bench() {
	unpack bench
	# The table within 330 s (its ResNet-18 row first), the scaling within
	# what is left but the pinned copy's minute.
	[ -f bench/gpu_table.sh ] && CAP=330 TAIL=30 part table env BUDGET=270 bash bench/gpu_table.sh
	CAP=$((deadline - $(date +%s) - 60)) TAIL=8 part scaling bash bench/gpu_scaling.sh 1600 1,2,4,8,16
	if [ -d /tmp/faster-scaling ]; then # 1,600 images: 6 batches of 256
		TAIL=6 part pinned python3 bench/gpu_pinned.py /tmp/faster-scaling --batches 6 --batch 256
	fi
	echo "== parts"; cat "$OUT/parts.txt"
}

feed() {
	unpack bench
	# 4,800 photographs (18 batches of 256 an epoch): enough that the
	# feed's steps and the stage's rate are not its start-up's.
	tree=/tmp/faster-feed
	if [ ! -d "$tree" ]; then
		python3 bench/imagenet_like.py "$tree" --classes 40 --per-class 120 --seed 7 --quality 95 --src "$gpu/photos" >/dev/null ||
			{ echo "h200: could not write the photographs"; exit 2; }
	fi
	# The GPU stage alone on at most 4 cores (the goal: >= 15,000 images/s).
	TAIL=6 part stage4 timeout 60 taskset -c 0-3 "$FASTER_BIN" bench load "$tree" --device cuda --workers 4 --batch 256 --epochs 4 --json
	# Both together: a quarter of each batch decoded by every core beside the GPU (--cpu-share).
	TAIL=6 part stageshare timeout 60 "$FASTER_BIN" bench load "$tree" --device cuda --cpu-share 0.25 --batch 256 --epochs 4 --json
	TAIL=14 part feed timeout 300 python3 bench/gpu_feed.py "$tree" --steps 40 --warmup 10
	# Where PyTorch's step time goes (eager, kernels' busy time, as a CUDA
	# graph) and each step's floor from its FLOPs and bytes (issue 37 §2-3).
	TAIL=8 part where timeout 120 python3 bench/gpu_where.py
	# The study's loading table with the GPU column (issue 38 §5): torchvision,
	# ours on the cpu, ours decoding on the GPU; the block-IO throttle where the
	# VM allows it (root and the io controller), else the data evicted (disk)
	# and warm (cache) only; 4 workers, the GPU path's budget.
	storage() {
		"$FASTER_BIN" bench storage imagefolder="$tree" --class "$1" --workers 4 --batch 256 --epochs 1 --device cuda \
			--engine "torchvision DataLoader=python3 bench/peer_dataloader.py {path} --workers {workers} --batch {batch} --epochs {epochs}" \
			--engine "faster="
	}
	TAIL=16 part storage timeout 150 bash -c "$(declare -f storage); tree=$tree FASTER_BIN=$FASTER_BIN; storage hdd,ssd,disk,cache || storage disk,cache"
	echo "== parts"; cat "$OUT/parts.txt"
}

# first: what one call of a first session should learn, in under ten
# minutes, from the check's carry: the header probe, the backend's device
# check (traintest on cuda, Trainer steps against the twin, pinned
# copies, layouts; at most 4 minutes), and the table's single and
# single+graph rows on synthetic data (one epoch) with the ResNet-18 row,
# ours beside PyTorch (at most 4 minutes: data made, then cells until 200 s). check, bench and feed take
# about 19 minutes in all, more than a session's 15.
first() {
	unpack check
	{
		nvidia-smi --query-gpu=name,driver_version,memory.total,memory.used --format=csv,noheader
		python3 -c 'import torch, sys; print(sys.version.split()[0], torch.__version__, torch.cuda.is_available())'
		"$FASTER_BIN" --version
	} 2>&1 | head -20
	TAIL=12 part probe timeout 60 bash train/cuda/probe/probe.sh
	TAIL=8 part probe-nvjpeg timeout 30 bash gpudecode/nvjpeg/probe/probe.sh
	TAIL=45 part gpucheck env GPUCHECK_TIMEOUT=240s bash train/cuda/gpucheck.sh
	TAIL=30 part table env ROWS_SYN="single single+graph" ROWS_FM="" EPOCHS_SYN=1 BUDGET=200 CELL_TIMEOUT=60 bash bench/gpu_table.sh
	echo "== parts"; cat "$OUT/parts.txt"
}

case "${1:-}" in
build) build ;;
first) first ;;
check) check ;;
bench) bench ;;
feed) feed ;;
*) echo "usage: bash scripts/h200.sh build|first|check|bench|feed"; exit 2 ;;
esac
