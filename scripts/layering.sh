#!/usr/bin/env bash
# Checks the layering rules of docs/architecture.md: only the cgo packages
# import "C"; library packages never import the CLI framework; pipeline
# knows nothing of images or models; the loader knows no container format
# (shard.Open and the source.Indexed/source.Streaming interfaces do).
set -euo pipefail
cd "$(dirname "$0")/.."
fail=0
cgo_allowed='^\./(imgcodec/turbojpeg|augment/internal/cref|augment/internal/simd|train/onednn|collective/gloo)/'
while IFS= read -r f; do
  if ! [[ "$f" =~ $cgo_allowed ]]; then echo "layering: $f imports \"C\" (only cgo packages may)"; fail=1; fi
done < <(grep -rl --include='*.go' '^import "C"' . || true)
while IFS= read -r f; do
  case "$f" in ./cmd/*) ;; *) echo "layering: $f imports cobra (only cmd/ may)"; fail=1;; esac
done < <(grep -rl --include='*.go' 'github.com/spf13/cobra' . || true)
if [ -d pipeline ] && grep -rqE '"github.com/faster-training/faster/(imgcodec|augment|train)' pipeline; then
  echo "layering: pipeline imports image or model code"; fail=1
fi
while IFS= read -r f; do
  case "$f" in *_test.go) ;; *) echo "layering: $f imports a container format (tfrecord, tfexample): formats live in source/ and shard/, the loader reads source.Indexed and source.Streaming"; fail=1;; esac
done < <(grep -rlE --include='*.go' '"github.com/faster-training/faster/(tfrecord|tfexample)"' loader serve || true)
exit $fail
