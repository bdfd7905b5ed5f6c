#!/usr/bin/env bash
# probe.sh: PREPARED, NOT YET RUN. On the GPU machine (nvcc and the CUDA
# headers there; no Go needed), checks train/cuda's own declarations
# (decls.h, consts.h) against the real headers: compiles probe.cpp with g++
# and each header found, and runs it. Prints first what the machine's
# loader sees (env, ldconfig), as GPU.md asks of a first call.
#
#   bash train/cuda/probe/probe.sh        # from the repository root
#
# Exit status: 0 when every header found agrees, 1 when a declaration
# disagrees (g++ names it: "decls.h declares X unlike the header"), 2 when
# no header was found at all.
set -u
here=$(cd "$(dirname "$0")" && pwd)
out=${OUT:-$(mktemp -d)}

echo "== loader environment"
env | grep -E '^(LD_LIBRARY_PATH|CUDA_HOME|CUDA_PATH|PATH)=' || true
ldconfig -p 2>/dev/null | grep -E 'libcuda\.so|libcudart|libnvrtc|libcublas|libcudnn\.so|libnccl' || echo "(ldconfig lists none)"
# The names the driver exports for the symbols the loader looks up under
# more than one (train/cuda/decls.go, exportNames).
libcuda=$(ldconfig -p 2>/dev/null | awk '$1 == "libcuda.so.1" {print $NF; exit}')
[ -n "$libcuda" ] && { nm -D "$libcuda" 2>/dev/null | grep -E ' cuEventElapsedTime(_v2)?$' || echo "(nm: no cuEventElapsedTime in $libcuda)"; }

# Where headers may be: the toolkit, the system, the torch venv's wheels.
dirs=()
for d in "${CUDA_HOME:-}" /usr/local/cuda-13.0 /usr/local/cuda; do
	[ -n "$d" ] && [ -d "$d/include" ] && dirs+=("$d/include")
done
dirs+=(/usr/include /usr/include/x86_64-linux-gnu)
if site=$(python3 -c 'import nvidia, os; print(os.path.dirname(list(nvidia.__path__)[0]))' 2>/dev/null); then
	for d in "$site"/nvidia/*/include "$site"/nvidia/cu13/include; do
		[ -d "$d" ] && dirs+=("$d")
	done
fi

flags=()
incs=()
found=0
for pair in DRIVER:cuda.h CUDART:cuda_runtime_api.h NVRTC:nvrtc.h CUBLAS:cublas_v2.h CUBLASLT:cublasLt.h CUDNN:cudnn.h NCCL:nccl.h; do
	lib=${pair%%:*}
	h=${pair#*:}
	where=""
	for d in "${dirs[@]}"; do
		if [ -f "$d/$h" ]; then
			where=$d
			break
		fi
	done
	if [ -n "$where" ]; then
		printf '%-9s %-20s %s\n' "$lib" "$h" "$where"
		flags+=("-DFASTER_PROBE_$lib")
		incs+=("-I$where")
		found=$((found + 1))
	else
		printf '%-9s %-20s NOT FOUND: its declarations unchecked\n' "$lib" "$h"
	fi
done
[ "$found" -eq 0 ] && { echo "probe: no CUDA header found"; exit 2; }

# cuda_runtime_api.h and cublas need the toolkit's include dir first.
uniq_incs=$(printf '%s\n' "${incs[@]}" | awk '!seen[$0]++')
# shellcheck disable=SC2086
# The compiler's log is probe-gxx.log: h200.sh's part writes this
# script's output to $OUT/probe.log.
cxx=$(command -v g++ || command -v c++) || { echo "probe: no C++ compiler (g++, c++): declarations unchecked"; exit 2; }
if ! "$cxx" -std=c++17 -w "${flags[@]}" $uniq_incs -o "$out/probe" "$here/probe.cpp" 2>"$out/probe-gxx.log"; then
	grep -E 'static assertion failed|error:' "$out/probe-gxx.log" | head -40
	if grep -qE 'fatal error: .*: No such file' "$out/probe-gxx.log"; then
		echo "probe: header not found (log: $out/probe-gxx.log): declarations unchecked"
		exit 2
	fi
	echo "probe: declarations disagree with the headers (log: $out/probe-gxx.log)"
	exit 1
fi
"$out/probe"
