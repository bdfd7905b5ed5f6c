#!/usr/bin/env bash
# gpucheck.sh: the cuda backend's device check. PREPARED, NOT YET RUN on a
# GPU (written without one; every part that runs without a GPU was run).
#
# On the build machine (Go and gcc here, no GPU), from the repository root:
#   bash train/cuda/gpucheck.sh build
# writes out/gpu/cuda.test (git-ignored; `go test -c`, stripped, ~10 MB;
# libjpeg-turbo linked in, -tags faster_static: the GPU machine, Ubuntu,
# has libjpeg.so.8, not Debian's libjpeg.so.62).
#
# On the GPU machine, in one device call, carrying out/gpu (it builds
# nothing there: no Go there):
#   bash train/cuda/gpucheck.sh
# and, in the same call, the header check if wanted (g++ only, ~2 s):
#   bash train/cuda/probe/probe.sh; bash train/cuda/gpucheck.sh
#
# It runs the carried binary's GPU tests with FASTER_REQUIRE_GPU=1 (a
# missing driver fails, never skips): NVRTC compiles kernels.cu for the
# device's architecture (then a cache hit), each library is called once,
# every kernel runs on a ThinNet and a ResNet-18 step's sizes and is
# compared with its CPU build; then the cuda train.Backend itself runs
# traintest's suites (RunLayers, RunTorchStep, RunResNet18) and 8 Trainer
# steps against its CPU twin (TestGPUBackend*, strict fp32, autotuned, and
# with TF32), native bf16/fp16 against the twin, and the step as a CUDA
# graph (TestGPUBackendStepCapture: replays bit-identical to eager steps);
# last, as figures, where a step's device time goes (TestGPUStepProfile)
# and the convolutions' layouts. Three runs of the binary, in that order,
# sharing GPUCHECK_TIMEOUT (a quarter, a half, the rest).
# It prints short tables last; the whole log
# goes to $OUT/gpucheck-tests.log (or /tmp; not gpucheck.log, which
# h200.sh's part writes this script's output to). Exit status: the test
# binary's.
# It reads the card's state (nvidia-smi's query) and changes nothing.
set -u
root=$(cd "$(dirname "$0")/../.." && pwd)
bin=$root/out/gpu/cuda.test

if [ "${1:-}" = build ]; then
	mkdir -p "$root/out/gpu"
	cd "$root" && go test -c -tags faster_static -ldflags='-s -w' -o "$bin" ./train/cuda || exit 1
	ls -l "$bin"
	exit 0
fi

[ -x "$bin" ] || { echo "gpucheck: $bin missing: run 'bash train/cuda/gpucheck.sh build' where Go is, and carry out/gpu"; exit 2; }
log=${OUT:-/tmp}/gpucheck-tests.log
# table: '|'-separated rows aligned (column, where the machine has it).
table() { if command -v column >/dev/null; then column -t -s'|'; else tr '|' '\t'; fi; }
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null || echo "(no nvidia-smi)"
cd "$root/train/cuda" || exit 2
start=$(date +%s)
: >"$log"
# phase NAME REGEXP SECONDS [BENCH]: one run of the binary, its log appended.
rc=0
phase() {
	echo "== phase $1 ($3 s at most)" >>"$log"
	# NCCL_DEBUG=WARN: a failing NCCL call logs why (bootstrap, topology)
	# beside the error's own ncclGetLastError text.
	NCCL_DEBUG=${NCCL_DEBUG:-WARN} FASTER_REQUIRE_GPU=1 "$bin" -test.run "$2" -test.v -test.timeout "${3}s" \
		-test.bench "${4:-^$}" -test.benchtime 40x >>"$log" 2>&1
	local r=$?
	echo "== phase $1: exit $r" >>"$log"
	[ "$r" -ne 0 ] && rc=$r
	return 0
}
total=${GPUCHECK_TIMEOUT:-480s}
total=${total%s}
if [ -n "${GPUCHECK_RUN:-}" ]; then
	phase run "$GPUCHECK_RUN" "$total" "${GPUCHECK_BENCH:-}"
else
	# The basic checks first (NVRTC, its cubins and ptxas's spills at
	# the device's NVRTC, each library once, every kernel
	# against its CPU build), then the backend (and the copy rates), then
	# the figures (where a step's time goes, the layouts): a short budget
	# cuts the figures, never the checks.
	phase basics '^(TestGPUCompile|TestGPULibraries|TestGPUKernels|TestLoaderTable|TestNVRTCCompilesKernels)$' $((total / 4))
	phase backend '^TestGPUBackend' $((total / 2)) "${GPUCHECK_BENCH:-^BenchmarkGPUCopyIn$}"
	left=$((total - ($(date +%s) - start)))
	[ "$left" -gt 20 ] && phase figures '^(TestGPUStepProfile|TestGPUConvLayouts|TestGPUConvLayoutsResNet18)$' "$left"
fi
echo "== $(($(date +%s) - start)) s, exit $rc; log $log"
grep -E '^== phase .*: exit' "$log"
grep -E 'probe: |device: ' "$log" | sed 's/^ *//' | cut -c1-400
echo "== libraries, each called once"
grep -o 'GPULIB|.*' "$log" | cut -d'|' -f2-
echo "== kernels: GPU against the CPU build"
{
	echo "kernel|size|ms|agreement|verdict"
	grep -o 'GPUCHECK|.*' "$log" | cut -d'|' -f2-
} | table
echo "== the cuda backend on the GPU (traintest suites, Trainer steps against the twin)"
{
	echo "check|verdict"
	grep -o 'GPUBACKEND|.*' "$log" | cut -d'|' -f2-
} | table
echo "== copies from host memory: pinned staging against pageable (the study's pin_memory)"
grep -E '^BenchmarkGPUCopyIn' "$log"
echo "== where a step's device time goes (events around each call; eager steps)"
{
	echo "network|op|calls|device ms a step|share"
	grep -o 'GPUPROF|.*' "$log" | cut -d'|' -f2-
} | table
echo "== convolutions by layout (ms: forward, backward data, backward filter; fastest algorithm)"
{
	echo "network|shape|NCHW|NHWC"
	grep -o 'GPULAYOUT|.*' "$log" | cut -d'|' -f2-
} | table
grep -E '^(--- FAIL|FAIL|PASS|ok)' "$log" | head -20
[ "$rc" -ne 0 ] && grep -E '_test\.go:[0-9]+: ' "$log" | grep -v -E 'GPUCHECK|GPULIB|GPUPROF|GPULAYOUT' | sed 's/^ *//' | cut -c1-300 | head -20
exit $rc
