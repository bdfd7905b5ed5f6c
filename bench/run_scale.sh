#!/usr/bin/env bash
# ImageNet counts without ImageNet: prints a markdown table of what faster's
# epoch machinery costs at ImageNet's 1,281,167 records and at 100M, in one
# run, on this machine:
#   - an epoch's order (pipeline.Permutation), one rank's plan (the loader's
#     stride view, world 8), a resume half-way through an epoch (the loader's
#     remaining order) and the shards' record table of a global shuffle:
#     memory per record and CPU time (Go benchmarks *_scale_bench_test.go:
#     BenchmarkScale*, run once each);
#   - listing a 1.28M-file ImageFolder: faster (source.OpenImageFolder)
#     against torchvision.datasets.ImageFolder on the same tree, which the
#     script generates: 1000 class folders n00000000 … n00000999 of 1281
#     or 1282 EMPTY files each (1,281,167 in all, ImageNet's train count,
#     named like ImageNet's), in tmpfs (/dev/shm) when it is there, else
#     under /tmp, and removes afterwards (about 1.5 GB of kernel memory
#     while it exists);
#   - packing per core: `faster pack --workers 1` (taskset -c 0) of
#     ImageNet-sized photographs (bench/imagenet_like.py, PACK_IMAGES of
#     them, seed 11), records/s and MB/s of wall time and per CPU second,
#     median of PACK_REPS runs.
# Times are CPU times where marked (the machine may be shared); wall times
# are given too. Usage: bench/run_scale.sh [PACK_IMAGES] [PACK_REPS]
set -euo pipefail
cd "$(dirname "$0")/.."
pack_images=${1:-600}
pack_reps=${2:-3}
export PATH=/usr/local/go/bin:$PATH
go build -o bin/faster ./cmd/faster
shm=/tmp
if [ -d /dev/shm ] && [ -w /dev/shm ]; then shm=/dev/shm; fi
work=$(mktemp -d "$shm/faster-scale.XXXXXX")
trap 'rm -rf "$work"' EXIT
out=$work/results
mkdir -p "$out"
one() { nice -n -10 taskset -c 0 "$@"; }

echo "run_scale: Go benchmarks (orders, plans, resume, record table)" >&2
one go test ./pipeline/ -run '^$' -bench 'BenchmarkScaleEpochOrder' -benchtime 1x >"$out/pipeline.txt"
one go test ./loader/ -run '^$' -bench 'BenchmarkScale' -benchtime 1x >"$out/loader.txt"
one go test ./shard/ -run '^$' -bench 'BenchmarkScaleRecordTable' -benchtime 1x >>"$out/loader.txt"

echo "run_scale: generating the 1.28M-file tree under $work/tree" >&2
/usr/bin/python3 - "$work/tree" <<'EOF'
import os, sys
root = sys.argv[1]
total, classes = 1_281_167, 1000
flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL
for c in range(classes):
    d = os.path.join(root, "n%08d" % c)
    os.makedirs(d)
    for i in range(total // classes + (1 if c < total % classes else 0)):
        os.close(os.open(os.path.join(d, "n%08d_%d.JPEG" % (c, i)), flags, 0o644))
EOF
echo "run_scale: listing it (faster, then torchvision)" >&2
FASTER_SCALE_TREE=$work/tree one go test ./source/ -run '^$' -bench 'BenchmarkScaleListImageFolder' -benchtime 1x >"$out/list.txt"
one /usr/bin/python3 bench/peer_list_torchvision.py "$work/tree" >"$out/list_tv.json"
rm -rf "$work/tree"

echo "run_scale: packing $pack_images ImageNet-sized photographs, one core" >&2
per=$(( (pack_images + 9) / 10 ))
/usr/bin/python3 bench/imagenet_like.py "$work/photos" --classes 10 --per-class "$per" --seed 11 >/dev/null
: >"$out/pack.txt"
for r in $(seq 1 "$pack_reps"); do
  rm -rf "$work/shards"
  /usr/bin/time -f '%U %S' -o "$work/time.txt" nice -n -10 taskset -c 0 \
    bin/faster pack "$work/photos" "$work/shards" --workers 1 --json >"$work/pack.json"
  /usr/bin/python3 -c '
import json, sys
r = json.load(open(sys.argv[1])); u, s = map(float, open(sys.argv[2]).read().split()[-2:])
print(r["records"], r["bytes"], r["seconds"], u + s)' "$work/pack.json" "$work/time.txt" >>"$out/pack.txt"
done

/usr/bin/python3 - "$out" <<'EOF'
import json, os, re, statistics, sys
out = sys.argv[1]

def bench(name):
    rows = {}
    for line in open(os.path.join(out, name)):
        if not line.startswith("Benchmark"):
            continue
        f = line.split()
        m = {f[i + 1]: float(f[i]) for i in range(2, len(f) - 1, 2)}
        rows[re.sub(r"-\d+$", "", f[0])] = m
    return rows

p, l, s = bench("pipeline.txt"), bench("loader.txt"), bench("list.txt")
N1, N2 = 1_281_167, 100_000_000

def mem(bpr, n):
    b = bpr * n
    for unit, k in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if b >= k:
            return "%.3g %s" % (b / k, unit)
    return "%.0f B" % b

print("| what | records | memory per record | memory in all | CPU time |")
print("|---|---:|---:|---:|---|")
for n in (N1, N2):
    m = p["BenchmarkScaleEpochOrder/n=%d" % n]
    print("| epoch order: `pipeline.Permutation` (Feistel, computed per position) | %s | %.2g B | %d B | build %.0f µs; %.0f ns/record, %.2f s for the whole order |"
          % (f"{n:,}", m["B/record"], m["heap-B"], m["build-ns"] / 1e3, m["ns/record"], m["epoch-s"]))
for n in (N1, N2):
    m = l["BenchmarkScaleRankPlan/n=%d" % n]
    print("| one rank's plan, world 8: `loader` stride view over the order | %s | %.2g B | %s | %.0f ns/record, %.2f s for the rank's n/8 |"
          % (f"{n:,}", m["B/record"], mem(m["B/record"], n), m["ns/record"], m["epoch-s"]))
for n in (N1, N2):
    m = l.get("BenchmarkScaleResume/n=%d" % n)
    if m:
        print("| resume half-way through an epoch: `loader` remaining order (prefix skipped, band listed) | %s | %.2f B | %s | %.2f s to build (%.0f ns/record) |"
              % (f"{n:,}", m["B/record"], mem(m["B/record"], n), m["build-s"], m["ns/record"]))
rt = {int(k.split("=")[1]): v for k, v in l.items() if k.startswith("BenchmarkScaleRecordTable/")}
for n in sorted(rt):
    m = rt[n]
    print("| shards' record table (global shuffle): `recordTable`, .idx entries, 1251 records a shard | %s | %.1f B | %s | %.0f ns/lookup |"
          % (f"{n:,}", m["B/record"], mem(m["B/record"], n), m["ns/lookup"]))
if N2 not in rt and rt:
    b = max(rt.items())[1]["B/record"]
    print("| shards' record table at 100M (B/record as measured at %s, times 100M; not allocated here) | %s | %.1f B | %s | |"
          % (f"{max(rt):,}", f"{N2:,}", b, mem(b, N2)))
g = s["BenchmarkScaleListImageFolder"]
tv = json.load(open(os.path.join(out, "list_tv.json")))
print("| listing a 1.28M-file ImageFolder: faster `source.OpenImageFolder` (stats every file) | %s files | %.0f B kept | %s | %.1f s CPU (%.1f s wall) |"
      % (f"{int(g['files']):,}", g["kept-B/file"], mem(g["kept-B/file"], g["files"]), g["cpu-s"], g["wall-s"]))
g = s.get("BenchmarkScaleListImageFolderNoStat")
if g:
    print("| listing it as the loader does: `source.ListImageFolder` (no stat a file) | %s files | %.0f B kept | %s | %.1f s CPU (%.1f s wall) |"
          % (f"{int(g['files']):,}", g["kept-B/file"], mem(g["kept-B/file"], g["files"]), g["cpu-s"], g["wall-s"]))
print("| listing the same tree: torchvision `datasets.ImageFolder` | %s files | %.0f B kept | %s | %.1f s CPU (%.1f s wall) |"
      % (f"{tv['files']:,}", tv["kept_bytes_per_file"], mem(tv["kept_bytes_per_file"], tv["files"]), tv["cpu_s"], tv["wall_s"]))
runs = [list(map(float, x.split())) for x in open(os.path.join(out, "pack.txt")) if x.strip()]
rec, byt = runs[0][0], runs[0][1]
wall = statistics.median(r[2] for r in runs)
cpu = statistics.median(r[3] for r in runs)
print("| packing per core: `faster pack --workers 1`, ImageNet-sized photographs (%.0f kB mean) | %d images | | | %.0f images/s, %.1f MB/s per CPU-second (wall: %.0f images/s, %.1f MB/s); median of %d |"
      % (byt / rec / 1e3, rec, rec / cpu, byt / cpu / 1e6, rec / wall, byt / wall / 1e6, len(runs)))
EOF
