#!/usr/bin/env bash
# Runs every fuzz target of the repository for FUZZTIME each (make fuzz;
# make test runs it with 3s). The targets are discovered, not listed: every
# `func FuzzXxx(` in a _test.go file, keyed by its package directory (two
# packages may both have a FuzzDecode), so a new fuzzer runs from the day it
# is written. A failure reruns the target on its corpus alone, so the log
# ends with the failing input's name and the package.
# Usage: scripts/fuzz.sh [FUZZTIME] [--list]
set -euo pipefail
cd "$(dirname "$0")/.."
fuzztime=${1:-10s}
GO=${GO:-go}
targets=$(git ls-files '*_test.go' 2>/dev/null | xargs grep -HE '^func Fuzz[A-Za-z0-9_]*\(' 2>/dev/null |
	sed -E 's#^(.*)/[^/]*_test\.go:func (Fuzz[A-Za-z0-9_]*)\(.*#./\1:\2#' | sort -u)
if [ -z "$targets" ]; then
	echo "fuzz: no fuzz targets found (is this a git checkout?)" >&2
	exit 1
fi
if [ "${2:-}" = --list ]; then
	echo "$targets"
	exit 0
fi
echo "fuzz: $(echo "$targets" | wc -l) targets, $fuzztime each"
for t in $targets; do
	pkg=${t%%:*}
	name=${t##*:}
	echo "fuzz $pkg $name ($fuzztime)"
	if ! $GO test "$pkg" -run '^$' -fuzz "^$name\$" -fuzztime "$fuzztime" -fuzzminimizetime 100x >/dev/null; then
		echo "fuzz: $pkg $name failed; its corpus again:" >&2
		$GO test "$pkg" -run '^$' -fuzz "^$name\$" -fuzztime 1x || true
		exit 1
	fi
done
