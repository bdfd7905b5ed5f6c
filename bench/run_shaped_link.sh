#!/usr/bin/env bash
# Data-parallel training over a shaped network link, ours beside PyTorch's
# in the same run: ThinNet on Fashion-MNIST, `faster train --strategy ddp`
# and torch DistributedDataParallel over gloo (bench/peer_thinnet_torch.py:
# the same model, data, per-rank batch, SGD, --threads 1 per rank).
#
#   bench/run_shaped_link.sh [--json FILE] [DATA]
#   env: BATCH (32: per rank), STEPS (30), ROUNDS (20: of all-reduce alone),
#        FILTERS (32,64,128: ThinNet's widths, 1.9 MB of gradients),
#        BUCKET_KB (512: both engines' bucket cap; torch's first bucket
#        stays at its 1 MiB), RATE (1gbit), DELAY (1ms), REPEAT (1: rounds
#        of the six runs, alternated; the table takes each number's median)
#
# Two "machines" are network namespaces joined by a veth pair (inside the
# namespaces only: the host's network is not touched; needs root and
# iproute2), both ends shaped with `tc qdisc … netem rate RATE delay DELAY`
# (where the kernel has no netem: `tbf rate RATE`, no added delay, and the
# table says so). For each engine, measured one after the other:
#
#   compute     one rank alone, no communication (batch BATCH), in each
#               namespace at once: two independent runs, so that the CPUs
#               are shared as in the 2-rank runs (the namespaces share
#               the host's cores); the mean of the two
#   1 node      2 ranks in one namespace, over its loopback
#   2 nodes     1 rank per namespace, over the shaped link
#   alone       a step's gradient all-reduces with no compute, over the
#               shaped link, in the engine's own buckets (after the 2-node
#               training: `faster train --time-allreduce`, the peer's
#               --time-allreduce), mean of ROUNDS
#
# step = training seconds / steps (evaluation excluded, the first step
# included, the same for both), and one definition of the share hidden:
#
#   hidden = 1 − (step_2nodes − step_compute) / alone
#
# (1: the all-reduces cost the step nothing; 0: they add their whole
# time; measured, never clipped, so noise can push it outside [0, 1]).
# Each engine's own timers give a second view: ours the time a rank waits
# for the buckets once its backward pass ended (exposed), torch DDP's
# logger's communication time minus its overlap with the backward pass
# (over the iterations it samples, the first ten here); "own hidden" is
# 1 − exposed / the all-reduce time during training.
set -euo pipefail
cd "$(dirname "$0")/.."
JSON=out/shaped_link.json
if [ "${1:-}" = --json ]; then JSON=$2; shift 2; fi
DATA=${1:-/usr/share/datasets/fashion-mnist}
BATCH=${BATCH:-32}
STEPS=${STEPS:-30}
ROUNDS=${ROUNDS:-20}
REPEAT=${REPEAT:-1}
FILTERS=${FILTERS:-32,64,128}
BUCKET_KB=${BUCKET_KB:-512}
RATE=${RATE:-1gbit}
DELAY=${DELAY:-1ms}
PY=/usr/bin/python3 # Debian's python3-torch
if [ "$(id -u)" != 0 ] || ! command -v ip >/dev/null || ! command -v tc >/dev/null; then
  echo "run_shaped_link.sh: skipped: needs root, ip and tc (iproute2) for the network namespaces" >&2
  exit 0
fi
go build -o bin/faster ./cmd/faster
id=$$
ns=(fsl-$id-a fsl-$id-b)
veth=(fsl${id}a fsl${id}b)
ip4=(10.214.0.1 10.214.0.2)
out=$(mktemp -d)
cleanup() {
  for n in "${ns[@]}"; do
    for p in $(ip netns pids "$n" 2>/dev/null); do kill -9 "$p" 2>/dev/null || true; done
    ip netns del "$n" 2>/dev/null || true
  done
  rm -rf "$out"
}
trap cleanup EXIT
ip netns add "${ns[0]}"
ip netns add "${ns[1]}"
ip -n "${ns[0]}" link add "${veth[0]}" type veth peer name "${veth[1]}" netns "${ns[1]}"
shaping="netem rate $RATE delay $DELAY"
for i in 0 1; do
  ip -n "${ns[$i]}" addr add "${ip4[$i]}/24" dev "${veth[$i]}"
  ip -n "${ns[$i]}" link set "${veth[$i]}" up
  ip -n "${ns[$i]}" link set lo up
  if ! tc -n "${ns[$i]}" qdisc add dev "${veth[$i]}" root netem rate "$RATE" delay "$DELAY" 2>/dev/null; then
    tc -n "${ns[$i]}" qdisc add dev "${veth[$i]}" root tbf rate "$RATE" burst 64kb latency 50ms
    shaping="tbf rate $RATE (this kernel has no netem: no added delay)"
  fi
done
inA() { ip netns exec "${ns[0]}" "$@"; }
inB() { ip netns exec "${ns[1]}" "$@"; }
global=$((2 * BATCH))
common=(--data "$DATA" --test-limit 64 --lr 0.01 --filters "$FILTERS")
ours=(bin/faster train "${common[@]}" --threads 1 --json)
ddp=(--strategy ddp --batch "$global" --limit $((STEPS * global)) --bucket-kb "$BUCKET_KB" --time-allreduce "$ROUNDS")
peer=("$PY" bench/peer_thinnet_torch.py "${common[@]}" --threads 1)
tddp=(--world 2 --batch "$global" --limit $((STEPS * global)) --bucket-kb "$BUCKET_KB" --time-allreduce "$ROUNDS")
load() { cut -d' ' -f1-3 /proc/loadavg; }
loads=("start $(load)")
echo "ThinNet $FILTERS, Fashion-MNIST, batch $BATCH per rank, $STEPS steps, --threads 1 per rank; link: $shaping; load: $(load)" >&2
note() { echo "  $1 (load $(load))" >&2; loads+=("$1 $(load)"); }

for r in $(seq 1 "$REPEAT"); do
  note "faster: compute, round $r"
  inB "${ours[@]}" --batch "$BATCH" --limit $((STEPS * BATCH)) >"$out/ours.computeB.$r.json" &
  inA "${ours[@]}" --batch "$BATCH" --limit $((STEPS * BATCH)) >"$out/ours.compute.$r.json"
  wait
  note "torch: compute, round $r"
  inB "${peer[@]}" --batch "$BATCH" --limit $((STEPS * BATCH)) >"$out/torch.computeB.$r.json" &
  inA "${peer[@]}" --batch "$BATCH" --limit $((STEPS * BATCH)) >"$out/torch.compute.$r.json"
  wait

  note "faster: 1 node, 2 ranks, round $r"
  inA "${ours[@]}" "${ddp[@]}" --nproc 2 >"$out/ours.one.$r.json"
  note "torch: 1 node, 2 ranks, round $r"
  inA env MASTER_ADDR=127.0.0.1 MASTER_PORT=29511 GLOO_SOCKET_IFNAME=lo "${peer[@]}" "${tddp[@]}" --rank 1 >/dev/null &
  inA env MASTER_ADDR=127.0.0.1 MASTER_PORT=29511 GLOO_SOCKET_IFNAME=lo "${peer[@]}" "${tddp[@]}" --rank 0 >"$out/torch.one.$r.json"
  wait

  note "faster: 2 nodes, round $r"
  nodes=(--nproc 1 --nnodes 2 --master-addr "${ip4[0]}" --master-port 29500)
  inB "${ours[@]}" "${ddp[@]}" "${nodes[@]}" --node-rank 1 >/dev/null &
  inA "${ours[@]}" "${ddp[@]}" "${nodes[@]}" --node-rank 0 >"$out/ours.two.$r.json"
  wait
  note "torch: 2 nodes, round $r"
  inB env MASTER_ADDR="${ip4[0]}" MASTER_PORT=29512 GLOO_SOCKET_IFNAME="${veth[1]}" "${peer[@]}" "${tddp[@]}" --rank 1 >/dev/null &
  inA env MASTER_ADDR="${ip4[0]}" MASTER_PORT=29512 GLOO_SOCKET_IFNAME="${veth[0]}" "${peer[@]}" "${tddp[@]}" --rank 0 >"$out/torch.two.$r.json"
  wait
done
note "end"
mkdir -p "$(dirname "$JSON")"
printf '%s\n' "${loads[@]}" >"$out/loads"
"$PY" - "$out" "$JSON" "$shaping" "$BATCH" "$STEPS" "$FILTERS" "$ROUNDS" "$REPEAT" <<'PY'
import json, statistics, sys
d, dest, shaping, batch, steps, filters, rounds, repeat = sys.argv[1:]
runs = {}
for eng in ("ours", "torch"):
    for kind in ("compute", "computeB", "one", "two"):
        runs[eng, kind] = [json.load(open("%s/%s.%s.%d.json" % (d, eng, kind, r))) for r in range(1, int(repeat) + 1)]
def step(r):  # training seconds per step; images count the global batch
    if isinstance(r, tuple):  # the two compute-only runs at once
        return sum(map(step, r)) / len(r)
    return r["seconds"] / (r["images"] / r["batch"])
med = statistics.median
rows = {}
for eng, name in (("ours", "faster"), ("torch", "PyTorch %s" % runs["torch", "compute"][0]["backend"].split("-", 1)[1])):
    c, one, two = list(zip(runs[eng, "compute"], runs[eng, "computeB"])), runs[eng, "one"], runs[eng, "two"]
    sc, s1, s2 = med(map(step, c)), med(map(step, one)), med(map(step, two))
    dds = [r["ddp"] for r in two]
    alone = med(dd["allreduce_alone_seconds_per_step"] for dd in dds)
    if eng == "ours":
        during = med(dd["allreduce_seconds_per_step"] for dd in dds)
        exposed = med(dd["exposed_wait_seconds_per_step"] for dd in dds)
    else:
        during = med(dd["logged_avg_backward_comm_ns"] / 1e9 for dd in dds)
        exposed = med((dd["logged_avg_backward_comm_ns"] - dd["logged_avg_backward_compute_comm_overlap_ns"]) / 1e9 for dd in dds)
    rows[name] = {"step_compute_s": sc, "step_1node_s": s1, "step_2nodes_s": s2, "ratio_2nodes_1node": s2 / s1,
                  "allreduce_alone_s": alone, "allreduce_alone_1node_s": med(r["ddp"]["allreduce_alone_seconds_per_step"] for r in one),
                  "hidden": 1 - (s2 - sc) / alone, "allreduce_during_training_s": during, "exposed_wait_s": exposed,
                  "own_hidden": 1 - exposed / during if during > 0 else None,
                  "bucket_bytes": dds[-1]["bucket_bytes"], "threads_per_rank": c[0][0]["threads"],
                  "runs": {k: runs[eng, k] for k in ("compute", "computeB", "one", "two")}}
loads = open(d + "/loads").read().split("\n")
json.dump({"link": shaping, "batch_per_rank": int(batch), "steps": int(steps), "filters": filters, "alone_rounds": int(rounds),
           "repeat": int(repeat), "statistic": "median over the repeats",
           "hidden_definition": "1 - (step_2nodes - step_compute) / allreduce_alone", "load_average": [l for l in loads if l],
           "engines": rows}, open(dest, "w"), indent=2)
ms = lambda v: "%.1f" % (1e3 * v)
print("Link: %s. ThinNet %s, batch %s per rank, %s steps, 1 thread per rank; ms per step%s." % (
    shaping, filters, batch, steps, ", medians of %s rounds" % repeat if int(repeat) > 1 else ""))
print()
print("| engine | compute only (1 rank per namespace, no communication) | 1 node (2 ranks, loopback) | 2 nodes (shaped link) | 2 nodes / 1 node | all-reduce alone (shaped) | hidden | exposed wait (own timer) | own hidden | buckets (KiB) |")
print("|---|---|---|---|---|---|---|---|---|---|")
for name, r in rows.items():
    print("| %s | %s | %s | %s | %.2f× | %s | %.0f%% | %s | %s | %s |" % (
        name, ms(r["step_compute_s"]), ms(r["step_1node_s"]), ms(r["step_2nodes_s"]), r["ratio_2nodes_1node"],
        ms(r["allreduce_alone_s"]), 100 * r["hidden"], ms(r["exposed_wait_s"]),
        "-" if r["own_hidden"] is None else "%.0f%%" % (100 * r["own_hidden"]),
        "+".join(str(round(b / 1024)) for b in r["bucket_bytes"])))
print()
print("hidden = 1 − (2-node step − compute step) / all-reduce alone. Own timers: faster's wait for the buckets after the backward pass;")
print("torch DDP's logger (communication minus its overlap with the backward pass, sampled iterations). Load average (1, 5, 15 min): %s." % "; ".join(l for l in loads if l))
print("JSON: %s" % dest)
PY
