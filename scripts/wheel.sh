#!/usr/bin/env bash
# Builds the Python wheel of python/ with a `faster` binary inside that can
# serve: libjpeg-turbo linked statically (-tags faster_static), no oneDNN and
# no Gloo (-tags faster_serveonly: training falls back to the pure-Go
# backend, DDP is unavailable), so `pip install faster-*.whl` into any torch
# environment on this platform gives `import faster` and its server with
# nothing else to install. Needs Debian's python3-setuptools, python3-wheel
# and python3-pip (scripts/setup.sh); builds without a package index
# (--no-build-isolation).
# Usage: scripts/wheel.sh [OUTDIR]   (default dist/); prints the wheel's path.
set -euo pipefail
cd "$(dirname "$0")/.."
out=$(realpath -m "${1:-dist}")
export PATH=/usr/local/go/bin:$PATH
mkdir -p python/faster/_bin "$out"
CGO_ENABLED=1 go build -tags faster_serveonly,faster_static -ldflags '-s -w' \
  -o python/faster/_bin/faster.tmp ./cmd/faster
mv python/faster/_bin/faster.tmp python/faster/_bin/faster
tmp=$(mktemp -d); trap 'rm -rf "$tmp"; rm -rf python/build python/*.egg-info' EXIT
/usr/bin/python3 -m pip wheel --quiet --no-build-isolation --no-deps --no-index -w "$tmp" ./python >&2
whl=$(ls "$tmp"/faster-*.whl)
mv "$whl" "$out/"
echo "$out/$(basename "$whl")"
