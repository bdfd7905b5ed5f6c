#!/usr/bin/env bash
# Builds the Python wheel of python/ with a `faster` binary inside that can
# serve: libjpeg-turbo linked statically (-tags faster_static), no oneDNN and
# no Gloo (-tags faster_serveonly: training falls back to the pure-Go
# backend, DDP is unavailable), so `pip install faster-*.whl` into any torch
# environment on this platform gives `import faster` and its server with
# nothing else to install. Needs Debian's python3-setuptools, python3-wheel
# and python3-pip (scripts/setup.sh); builds without a package index
# (--no-build-isolation).
#
# The wheel holds no Python extension, so it is tagged for every CPython 3
# (py3-none) and for the glibc the binary really needs: the newest GLIBC_
# symbol version it imports, read off the binary, as manylinux_2_N (PEP
# 600). Its libraries must all be ones manylinux lets a wheel assume. It is
# built from a staged copy of python/, so no binary is left in the checkout's
# python/faster to shadow bin/faster.
# Usage: scripts/wheel.sh [OUTDIR]   (default dist/); prints the wheel's path.
set -euo pipefail
cd "$(dirname "$0")/.."
out=$(realpath -m "${1:-dist}")
export PATH=/usr/local/go/bin:$PATH
mkdir -p "$out"
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
# A binary an older wheel.sh left in the checkout would shadow bin/faster.
rm -rf python/faster/_bin python/build python/*.egg-info
mkdir -p "$tmp/src"
cp -r python/faster python/setup.py python/pyproject.toml "$tmp/src/"
find "$tmp/src" -name __pycache__ -prune -exec rm -rf {} +
mkdir -p "$tmp/src/faster/_bin"
bin="$tmp/src/faster/_bin/faster"
CGO_ENABLED=1 go build -buildvcs=auto -tags faster_serveonly,faster_static -ldflags '-s -w' -o "$bin" ./cmd/faster

# The libraries it needs: glibc's own, which manylinux assumes, and no other.
libs=$(readelf -d "$bin" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p')
for l in $libs; do
  case "$l" in
    libc.so.6|libm.so.6|libpthread.so.0|libdl.so.2|librt.so.1|ld-linux-x86-64.so.2|ld-linux-aarch64.so.1) ;;
    *) echo "scripts/wheel.sh: the binary needs $l, which a manylinux wheel may not assume" >&2; exit 1 ;;
  esac
done
glibc=$(objdump -T "$bin" | grep -o 'GLIBC_2\.[0-9]*' | sort -t. -k2,2n | tail -1 | cut -d. -f2)
glibc=$(( ${glibc:-17} < 17 ? 17 : ${glibc:-17} )) # manylinux's floor is glibc 2.17
arch=$(uname -m)
export FASTER_WHEEL_PLATFORM="manylinux_2_${glibc}_${arch}"

/usr/bin/python3 -m pip wheel --quiet --no-build-isolation --no-deps --no-index -w "$tmp/whl" "$tmp/src" >&2
whl=$(ls "$tmp"/whl/faster-*.whl)
mv "$whl" "$out/"
echo "$out/$(basename "$whl")"
