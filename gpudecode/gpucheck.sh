#!/usr/bin/env bash
# gpucheck.sh: the GPU decode stage's device check. PREPARED, NOT YET RUN on
# a GPU (written without one; every part that runs without a GPU was run).
#
# On the build machine (Go, gcc, cjpeg/djpeg; no GPU), from the repository root:
#   bash gpudecode/gpucheck.sh build
# writes out/gpu/gpudecode.test and out/gpu/nvjpeg.test (stripped `go test
# -c` binaries), out/gpu/photos/ (12 of Debian's photographs at 1/4 scale,
# re-encoded by cjpeg at quality 90: ImageNet-like sizes) and
# out/gpu/testdata/ (the progressive, 4:1:1, multi-scan sequential, CMYK and PNG files).
#
# On the GPU machine, in one device call, carrying out/gpu (no Go there):
#   bash gpudecode/nvjpeg/probe/probe.sh; bash gpudecode/gpucheck.sh
# It runs the binaries' GPU tests with FASTER_REQUIRE_GPU=1 (a missing
# driver fails, never skips): a batch on the decoder's own stream beside a
# kernel spinning on the legacy default stream (it must not wait for it),
# the loader's stage against the CPU path on the photographs (order,
# pixels within the stated bound, fallback count, buffers freed), then
# its rate beside the CPU path's; prints a table
# last; the log goes to $OUT/gpudecode-tests.log. Exit status: the first
# failing binary's. It reads the card's state and changes nothing.
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
out=$root/out/gpu

if [ "${1:-}" = build ]; then
	mkdir -p "$out/photos" "$out/testdata"
	cd "$root" || exit 1
	# libjpeg-turbo linked in (faster_static): the GPU machine, Ubuntu, has
	# libjpeg.so.8, not Debian's libjpeg.so.62.
	go test -c -tags faster_static -ldflags='-s -w' -o "$out/gpudecode.test" ./gpudecode || exit 1
	go test -c -tags faster_static -ldflags='-s -w' -o "$out/nvjpeg.test" ./gpudecode/nvjpeg || exit 1
	n=0
	for p in /usr/share/backgrounds/*/*/*.jpg; do
		[ -f "$p" ] || continue
		djpeg -scale 1/4 -ppm "$p" | cjpeg -quality 90 >"$out/photos/$(basename "$p")" || exit 1
		n=$((n + 1))
		[ "$n" -ge 12 ] && break
	done
	cp imgcodec/testdata/{progressive.jpg,ycc411.jpg,multiscan.jpg,gray.jpg,cmyk.jpg,png_named.JPEG,ycc420.jpg} "$out/testdata/"
	du -sh "$out"
	exit 0
fi

for b in gpudecode.test nvjpeg.test; do
	[ -x "$out/$b" ] || { echo "gpucheck: $out/$b missing: run 'bash gpudecode/gpucheck.sh build' where Go is, and carry out/gpu"; exit 2; }
done
log=${OUT:-/tmp}/gpudecode-tests.log # not gpudecode.log: h200.sh's part writes this script's output there
table() { if command -v column >/dev/null; then column -t -s'|'; else tr '|' '\t'; fi; }
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null || echo "(no nvidia-smi)"
export FASTER_REQUIRE_GPU=1 FASTER_PHOTOS=$out/photos FASTER_TESTDATA=$out/testdata
start=$(date +%s)
(cd "$root/gpudecode/nvjpeg" && "$out/nvjpeg.test" -test.run '^(TestLoaderTable|TestDecls|TestConsts|TestCanDecode|TestGPU)' -test.v -test.timeout 120s) >"$log" 2>&1
rc1=$?
(cd "$root/gpudecode" && "$out/gpudecode.test" -test.run '^TestGPU' -test.v -test.timeout 400s) >>"$log" 2>&1
rc2=$?
echo "== $(($(date +%s) - start)) s, exit $rc1/$rc2; log $log"
{
	echo "check|size|ms|result|verdict"
	grep -o 'GPUCHECK|.*' "$log" | cut -d'|' -f2-
} | table
grep -E '^(--- FAIL|FAIL|PASS|ok)' "$log" | head -20
rc=$rc1
[ "$rc" -eq 0 ] && rc=$rc2
[ "$rc" -ne 0 ] && grep -E '_test\.go:[0-9]+: ' "$log" | grep -v GPUCHECK | sed 's/^ *//' | cut -c1-300 | head -20
exit $rc
