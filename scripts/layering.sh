#!/usr/bin/env bash
# Checks the layering rules of docs/architecture.md: only the cgo packages
# import "C"; library packages never import the CLI framework; pipeline
# knows nothing of images or models.
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
exit $fail
