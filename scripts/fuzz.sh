#!/usr/bin/env bash
# Runs every fuzz target of the repository for FUZZTIME each (make fuzz;
# make test runs it with 3s). The targets are discovered, not listed: every
# `func FuzzXxx(` in a _test.go file, keyed by its package directory (two
# packages may both have a FuzzDecode), so a new fuzzer runs from the day it
# is written. A failure prints the engine's output and reruns the input it
# wrote: a failure there fails; one that does not reproduce on its input
# (the engine's, see below) gets one more fuzzing run.
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
log=$(mktemp)
trap 'rm -f "$log"' EXIT
# fuzz PKG NAME: one fuzzing run, its output in $log.
fuzz() {
	$GO test "$1" -run '^$' -fuzz "^$2\$" -fuzztime "$fuzztime" -fuzzminimizetime 100x >"$log" 2>&1
}
for t in $targets; do
	pkg=${t%%:*}
	name=${t##*:}
	echo "fuzz $pkg $name ($fuzztime)"
	fuzz "$pkg" "$name" && continue
	# The engine's own words (the failure, the input it wrote), then that
	# input alone: a crash or a hang in our code reproduces there.
	echo "fuzz: $pkg $name failed:" >&2
	tail -n 60 "$log" >&2
	input=$(sed -nE 's#.*Failing input written to (testdata/fuzz/[^ ]*).*#\1#p' "$log" | tail -n 1)
	if [ -n "$input" ]; then
		echo "fuzz: the input alone ($pkg/$input):" >&2
		if ! $GO test "$pkg" -run "^$name\$/^${input##*/}\$" -v >&2; then
			exit 1
		fi
		rm -f "${pkg#./}/$input"
	fi
	# Not reproducible on its input: the fuzzing engine's own failure (Go
	# issue 56238: a worker it judged hung on a loaded machine, which
	# depends on the machine, not on our code). Once more; a second
	# failure fails.
	echo "fuzz: $pkg $name: the failure does not reproduce on its input; fuzzing it once more" >&2
	if ! fuzz "$pkg" "$name"; then
		echo "fuzz: $pkg $name failed again:" >&2
		tail -n 60 "$log" >&2
		exit 1
	fi
done
