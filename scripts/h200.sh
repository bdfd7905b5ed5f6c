#!/usr/bin/env bash
# h200.sh: everything the GPU machine is for, in as few device calls as
# its quarter of an hour allows. PREPARED: its `build` part runs here; the
# rest waits for a session that is lent the machine (docs/gpu.md).
#
# Here (Go, gcc, no GPU), from the repository root:
#   bash scripts/h200.sh build
# builds what the GPU machine cannot (it has no Go) into out/gpu/ (git-
# ignored), compressed so that it fits one call's 64 MiB:
#   carry.tar.xz  bin/faster (-tags faster_static,faster_noonednn: the cuda
#                 backend, libjpeg-turbo static, Gloo, no oneDNN), the test
#                 binaries of train/cuda, train/traintest users, serve (the
#                 Python tests) and the nvJPEG package when it exists, the
#                 shared libraries the binary needs beyond glibc (Gloo's),
#                 and photographs (mate-backgrounds, at most 1600 px) to
#                 make ImageNet-like data from there.
# There, one device call each (run with carry ["out/gpu"], timeout ≤ 600):
#   bash scripts/h200.sh check   # ~5 min: headers probe, kernels and the
#                                #   backend against their CPU builds,
#                                #   traintest on cuda, nvJPEG pixels,
#                                #   Python tests on torch 2.11
#   bash scripts/h200.sh bench   # ~8 min: issue 37's table beside PyTorch,
#                                #   issue 38's scaling and pinned copy
# Each part's log and JSON go under $OUT; each prints a short table last,
# and a part that fails is reported and the next one runs.
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root" || exit 2
gpu=$root/out/gpu

build() {
	set -e
	mkdir -p "$gpu/stage/bin" "$gpu/stage/lib" "$gpu/stage/test" "$gpu/stage/photos"
	local tags=faster_static,faster_noonednn
	go build -tags $tags -ldflags '-s -w' -o "$gpu/stage/bin/faster" ./cmd/faster
	for p in ./train/cuda ./serve $(ls -d ./imgcodec/nvjpeg 2>/dev/null); do
		go test -c -tags $tags -ldflags '-s -w' -o "$gpu/stage/test/$(basename "$p").test" "$p"
	done
	# Gloo and what it needs; glibc and libstdc++ are the machine's.
	ldd "$gpu/stage/bin/faster" | awk '$3 ~ /^\// {print $3}' |
		grep -v -E '/(libc|libm|libstdc\+\+|libgcc_s|ld-linux[^/]*)\.so' |
		xargs -r -I{} cp -L {} "$gpu/stage/lib/"
	/usr/bin/python3 - "$gpu/stage/photos" <<'EOF'
import glob, os, sys
from PIL import Image
for f in sorted(glob.glob('/usr/share/backgrounds/mate/**/*.jpg', recursive=True)):
    im = Image.open(f).convert('RGB')
    im.thumbnail((1600, 1600))
    im.save(os.path.join(sys.argv[1], os.path.basename(f)), quality=95)
EOF
	tar -C "$gpu/stage" -cf - . | xz -T2 -6 >"$gpu/carry.tar.xz.tmp"
	mv "$gpu/carry.tar.xz.tmp" "$gpu/carry.tar.xz"
	rm -rf "$gpu/stage"
	ls -l "$gpu/carry.tar.xz"
}

unpack() {
	[ -f "$gpu/carry.tar.xz" ] || { echo "h200: $gpu/carry.tar.xz missing: run 'bash scripts/h200.sh build' where Go is, carry out/gpu"; exit 2; }
	mkdir -p "$gpu/x"
	xz -dc "$gpu/carry.tar.xz" | tar -C "$gpu/x" -xf - || exit 2
	mkdir -p "$root/bin" "$root/out/gpu"
	cp "$gpu/x/bin/faster" "$root/bin/faster"
	cp "$gpu/x/test/cuda.test" "$root/out/gpu/cuda.test" 2>/dev/null
	export LD_LIBRARY_PATH=$gpu/x/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
	export FASTER_BIN=$root/bin/faster PHOTOS=$gpu/x/photos PYTHONPATH=$root/python
	export OUT=${OUT:-/tmp/h200-out}
	mkdir -p "$OUT"
}

part() { # name command...: runs one part, its output in $OUT/NAME.log, its tail shown
	local name=$1
	shift
	local start rc
	start=$(date +%s)
	"$@" >"$OUT/$name.log" 2>&1
	rc=$?
	printf '== %-14s exit %-3s %4ss  (log %s)\n' "$name" "$rc" "$(($(date +%s) - start))" "$OUT/$name.log"
	echo "$name $rc" >>"$OUT/parts.txt"
	tail -n "${TAIL:-25}" "$OUT/$name.log" | cut -c1-220
}

check() {
	unpack
	{
		nvidia-smi --query-gpu=name,driver_version,memory.total,memory.used --format=csv,noheader
		env | grep -E '^(LD_LIBRARY_PATH|CUDA|PATH)=' | cut -c1-300
		ldconfig -p | grep -E 'libcu|libnv|libcudnn|libnccl' | cut -c1-160
		python3 -c 'import torch, torchvision, sys; print(sys.version.split()[0], torch.__version__, torchvision.__version__, torch.cuda.is_available())'
		"$FASTER_BIN" --version
	} >"$OUT/env.txt" 2>&1
	cat "$OUT/env.txt" | head -40
	part probe bash train/cuda/probe/probe.sh
	TAIL=40 part gpucheck bash train/cuda/gpucheck.sh
	if [ -x "$gpu/x/test/nvjpeg.test" ]; then
		(cd imgcodec/nvjpeg && FASTER_REQUIRE_GPU=1 timeout 120 "$gpu/x/test/nvjpeg.test" -test.run 'GPU' -test.v) >"$OUT/nvjpeg.log" 2>&1
		echo "== nvjpeg exit $?"; grep -E '^(--- |ok|FAIL|PASS)|GPUCHECK' "$OUT/nvjpeg.log" | head -20
	fi
	# The Python tests on torch 2.11 / Python 3.12 (issue 38 §4): the serve
	# package's TestPython drives python/tests with the machine's python3.
	(cd serve && FASTER_PYTHON=python3 timeout 240 "$gpu/x/test/serve.test" -test.run 'TestPython' -test.v) >"$OUT/python.log" 2>&1
	echo "== python tests exit $?"; grep -E '^(--- |ok|FAIL|PASS)|passed|failed' "$OUT/python.log" | head -20
	(cd serve && FASTER_PYTHON=python3 FASTER_PY_K=DeviceLoader FASTER_REQUIRE_GPU=1 timeout 180 "$gpu/x/test/serve.test" -test.run 'TestPython' -test.v) >"$OUT/device.log" 2>&1; echo "== device= tests exit $?"; grep -E '^(--- |ok|FAIL|PASS)|passed|failed|skipped' "$OUT/device.log" | head -20
}

bench() {
	unpack
	[ -f bench/gpu_table.sh ] && TAIL=30 part table bash bench/gpu_table.sh
	TAIL=8 part scaling bash bench/gpu_scaling.sh 1600 1,2,4,8,16
	if [ -d /tmp/faster-scaling ]; then
		TAIL=6 part pinned python3 bench/gpu_pinned.py /tmp/faster-scaling --batches 30 --batch 256
	fi
	echo "== parts"; cat "$OUT/parts.txt"
}

case "${1:-}" in
build) build ;;
check) check ;;
bench) bench ;;
*) echo "usage: bash scripts/h200.sh build|check|bench"; exit 2 ;;
esac
