#!/usr/bin/env bash
# gpu_scaling.sh: issue 38 §1 on the 16-core GPU machine: how the loader's
# rate grows with its workers, beside torchvision's DataLoader, on the same
# photographs, in one run. PREPARED, NOT YET RUN there (its parts ran here
# on 2 cores with WORKERS=1,2).
#
# It builds nothing: it takes bin/faster and the photographs carried in
# out/gpu (scripts/h200.sh build puts them there). On the GPU machine:
#   bash bench/gpu_scaling.sh [IMAGES] [WORKERS]     (defaults 1600, 1,2,4,8,16)
# For each worker count w, every loader runs pinned to cores 0..w-1
# (taskset), so the one-worker row is one core's rate, not one decode
# thread helped by the other fifteen:
#   bench-load   `faster bench load --workers w` (the pipeline alone)
#   f32-chw      faster.Loader, normalised float32 NCHW (bench/serve_loop.py)
#   u8-hwc       faster.Loader, uint8 NHWC (normalised on the accelerator)
#   torchvision  ImageFolder + DataLoader(num_workers=w) (the peer)
# train recipe at 224, batch 128, 2 epochs each (the second is the page
# cache's). Prints images/s and CPU ms per image for each cell, then each
# loader's efficiency at the largest w: rate(w) / (w × rate(1)); the
# issue's goal is ≥ 0.85 at 16. JSON lines go to $OUT/scaling.jsonl.
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root" || exit 2
images=${1:-1600}
workers=${2:-1,2,4,8,16}
out=${OUT:-/tmp}
mkdir -p "$out"
py=${PYTHON:-python3}
bin=${FASTER_BIN:-$root/bin/faster}
photos=${PHOTOS:-$root/out/gpu/photos}
[ -x "$bin" ] || { echo "gpu_scaling: $bin missing (build it where Go is and carry it)"; exit 2; }
tree=${TREE:-/tmp/faster-scaling}
if [ ! -d "$tree" ]; then
	per=$(((images + 39) / 40))
	$py bench/imagenet_like.py "$tree" --classes 40 --per-class "$per" --seed 7 --quality 95 --src "$photos" >/dev/null ||
		{ echo "gpu_scaling: could not write the photographs"; exit 2; }
fi
jsonl=$out/scaling.jsonl
: >"$jsonl"
export PYTHONPATH=$root/python FASTER_BIN=$bin
# The CPUs in the order that fills physical cores first: one hardware
# thread of each core (socket by socket), then their siblings. A VM's "16
# cores" may be 8 cores of 2 threads: pinning w workers to CPUs 0..w-1
# would then put two on one core from w=2 on, and the one-worker rate
# would not be what 16 more threads can multiply. The topology is kept
# in $OUT/lscpu.txt and named above the table.
order=$(lscpu -p=CPU,CORE,SOCKET 2>/dev/null | grep -v '^#' |
	awk -F, '{k=$3","$2; print n[k]++, $3, $2, $1}' | sort -k1,1n -k2,2n -k3,3n -k4,4n | awk '{print $4}' | paste -sd, -)
[ -n "$order" ] || order=$(seq -s, 0 $(($(nproc) - 1)))
cores() { echo "$order" | cut -d, -f1-"$1"; }
lscpu >"$out/lscpu.txt" 2>/dev/null
physical=$(lscpu -p=CORE,SOCKET 2>/dev/null | grep -v '^#' | sort -u | wc -l)
echo "gpu_scaling: $(nproc) logical CPUs on ${physical:-?} physical cores; pinning order $order"
cell() { # loader w json-or-empty
	local loader=$1 w=$2 j=$3
	if [ -z "$j" ]; then
		echo "{\"loader\":\"$loader\",\"workers\":$w,\"error\":true}" >>"$jsonl"
		return
	fi
	echo "$j" | $py -c "import json,sys; d=json.loads(sys.stdin.read()); d['loader']='$loader'; d['workers']=$w; print(json.dumps(d))" >>"$jsonl"
}
# Each cell under CELL_TIMEOUT (90 s: a hung loader costs that, not the
# call), its stderr kept in $out/scaling.err, named.
ct=${CELL_TIMEOUT:-90}
err=$out/scaling.err
: >"$err"
run() { # name cmd...: the command's stdout; its stderr, headed by name, into $err
	echo "== $1" >>"$err"
	shift
	timeout "$ct" "$@" 2>>"$err"
}
for w in ${workers//,/ }; do
	c=$(cores "$w")
	j=$(run "bench-load w=$w" taskset -c "$c" "$bin" bench load "$tree" --transform train --workers "$w" --epochs 2 --batch 128 --json |
		$py -c "import json,sys; d=json.load(sys.stdin); r=d['rows'][0] if 'rows' in d else d; print(json.dumps({'images_per_sec': r.get('images_per_sec'), 'cpu_seconds_per_1000_images': r.get('cpu_seconds_per_1000_images')}))" 2>>"$err")
	cell bench-load "$w" "$j"
	for layout in f32-chw u8-hwc; do
		j=$(run "$layout w=$w" taskset -c "$c" $py bench/serve_loop.py --loader faster "$tree" --workers "$w" --batch 128 --epochs 2 --layout "$layout" | tail -1)
		cell "$layout" "$w" "$j"
	done
	j=$(run "torchvision w=$w" taskset -c "$c" $py bench/serve_loop.py --loader torchvision "$tree" --workers "$w" --batch 128 --epochs 2 | tail -1)
	cell torchvision "$w" "$j"
done
$py - "$jsonl" "${physical:-0}" <<'EOF'
import json, sys
physical = int(sys.argv[2])
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
loaders = ["bench-load", "f32-chw", "u8-hwc", "torchvision"]
ws = sorted({r["workers"] for r in rows})
print("loader        " + "".join(f"{'w=' + str(w):>16}" for w in ws) + "   efficiency at max w")
for l in loaders:
    cells, rate = [], {}
    for w in ws:
        r = next((r for r in rows if r["loader"] == l and r["workers"] == w), None)
        if r is None or r.get("error") or not r.get("images_per_sec"):
            cells.append(f"{'error':>16}")
            continue
        rate[w] = r["images_per_sec"]
        ms = r.get("cpu_seconds_per_1000_images")
        cells.append(f"{rate[w]:>9.0f} {ms if ms is None else round(ms, 1):>6}")
    eff = ""
    if 1 in rate and ws and ws[-1] in rate and ws[-1] > 1:
        eff = f"{rate[ws[-1]] / (ws[-1] * rate[1]):.2f}"
    print(f"{l:<14}" + "".join(cells) + f"   {eff}")
print("(each cell: images/s and CPU ms per image)")
if physical and ws and ws[-1] > physical:
    print(f"(w={ws[-1]} is more than the {physical} physical cores: from w={physical} on, workers share cores' hardware"
          " threads, and the efficiency above counts each thread as a core)")
EOF
