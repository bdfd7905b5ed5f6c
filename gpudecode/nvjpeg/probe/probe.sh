#!/usr/bin/env bash
# probe.sh: PREPARED, NOT YET RUN. On the GPU machine (the CUDA toolkit's
# headers there, or the torch venv's nvidia wheels; no Go needed), checks
# gpudecode/nvjpeg's declarations against nvjpeg.h and
# cuda_runtime_api.h: compiles probe.cpp and runs it.
#
#   bash gpudecode/nvjpeg/probe/probe.sh      # from the repository root
#
# Exit status: 0 when they agree; 1 when one disagrees (the compiler names
# it: "decls.h declares X unlike the header", "consts.h: X is not N", or a
# symbol the header lacks); 2 when a header was not found ("probe: header
# not found: X": nvjpeg.h, cuda_runtime_api.h, or one they include).
set -u
here=$(cd "$(dirname "$0")" && pwd)
out=${OUT:-$(mktemp -d)}

# Where headers may be: the toolkit, the torch venv's wheels, the system.
# The wheels may hold nvjpeg.h and the runtime's headers apart (CUDA 12:
# nvidia/nvjpeg/include and nvidia/cuda_runtime/include; CUDA 13: both in
# nvidia/cu13/include), so each is looked for on its own.
dirs=()
for d in "${CUDA_HOME:-}" /usr/local/cuda-13.0 /usr/local/cuda; do
	[ -n "$d" ] && [ -d "$d/include" ] && dirs+=("$d/include")
done
if site=$(python3 -c 'import nvidia, os; print(os.path.dirname(list(nvidia.__path__)[0]))' 2>/dev/null); then
	for d in "$site"/nvidia/cu13/include "$site"/nvidia/*/include; do
		[ -d "$d" ] && dirs+=("$d")
	done
fi
dirs+=(/usr/include /usr/include/x86_64-linux-gnu)

# find_header prints the first of dirs (after $2, when given) holding $1.
find_header() {
	for d in ${2:+"$2"} "${dirs[@]}"; do
		if [ -f "$d/$1" ]; then
			echo "$d"
			return 0
		fi
	done
	return 1
}

if ! inc=$(find_header nvjpeg.h); then
	echo "probe: header not found: nvjpeg.h (looked in ${dirs[*]})"
	exit 2
fi
# The runtime's headers: beside nvjpeg.h when they are there.
if ! rt=$(find_header cuda_runtime_api.h "$inc"); then
	echo "probe: header not found: cuda_runtime_api.h (looked in $inc ${dirs[*]})"
	exit 2
fi
echo "probe: nvjpeg.h in $inc, cuda_runtime_api.h in $rt"
incs=(-I"$inc")
[ "$rt" != "$inc" ] && incs+=(-I"$rt")
cxx=g++
command -v "$cxx" >/dev/null || cxx=c++
if ! "$cxx" -std=c++17 -w "${incs[@]}" -o "$out/nvjpeg_probe" "$here/probe.cpp" 2>"$out/nvjpeg_probe.log"; then
	# A header one of them includes, missing: not a disagreement.
	missing=$(sed -n 's/.*fatal error: \([^:]*\): No such file or directory.*/\1/p' "$out/nvjpeg_probe.log" | head -1)
	if [ -n "$missing" ]; then
		echo "probe: header not found: $missing (included by the headers in ${incs[*]}; log: $out/nvjpeg_probe.log)"
		exit 2
	fi
	grep -E 'static assertion failed|error:' "$out/nvjpeg_probe.log" | head -40
	echo "probe: declarations disagree with the headers (log: $out/nvjpeg_probe.log)"
	exit 1
fi
"$out/nvjpeg_probe"
