#!/usr/bin/env bash
# probe.sh: PREPARED, NOT YET RUN. On the GPU machine (the CUDA toolkit's
# headers there; no Go needed), checks gpudecode/nvjpeg's declarations
# against nvjpeg.h and cuda_runtime_api.h: compiles probe.cpp and runs it.
#
#   bash gpudecode/nvjpeg/probe/probe.sh      # from the repository root
#
# Exit status: 0 when they agree, 1 when one disagrees (the compiler names
# it: "decls.h declares X unlike the header", "consts.h: X is not N"), 2
# when no nvjpeg.h was found.
set -u
here=$(cd "$(dirname "$0")" && pwd)
out=${OUT:-$(mktemp -d)}
inc=""
for d in "${CUDA_HOME:-}" /usr/local/cuda-13.0 /usr/local/cuda; do
	if [ -n "$d" ] && [ -f "$d/include/nvjpeg.h" ]; then
		inc=$d/include
		break
	fi
done
if [ -z "$inc" ] && site=$(python3 -c 'import nvidia, os; print(os.path.dirname(list(nvidia.__path__)[0]))' 2>/dev/null); then
	for d in "$site"/nvidia/cu13/include "$site"/nvidia/*/include; do
		[ -f "$d/nvjpeg.h" ] && { inc=$d; break; }
	done
fi
[ -z "$inc" ] && { echo "probe: no nvjpeg.h found"; exit 2; }
echo "probe: headers in $inc"
cxx=g++
command -v "$cxx" >/dev/null || cxx=c++
if ! "$cxx" -std=c++17 -w -I"$inc" -o "$out/nvjpeg_probe" "$here/probe.cpp" 2>"$out/nvjpeg_probe.log"; then
	grep -E 'static assertion failed|error:' "$out/nvjpeg_probe.log" | head -40
	echo "probe: declarations disagree with the headers (log: $out/nvjpeg_probe.log)"
	exit 1
fi
"$out/nvjpeg_probe"
