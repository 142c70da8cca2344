#!/usr/bin/env bash
# MegaScale's ToR design against an unsplit one, on the 175B job at 1,024 GPUs:
#   split:   400G ToR ports split into 2 x 200G, 64 nodes per ToR set (scenarios/faults-ecmp-tor-split-1024)
#   unsplit: one full 400G port per 200G NIC, 32 nodes per ToR set (scenarios/faults-ecmp-tor-unsplit-1024)
# For each, and each ECMP seed given (sim.seed picks the hash), prints the simulated step time and
# the ECMP collision figures the simulator counts as the job's flows start (sim/simulator.h
# SimStats): flows that crossed a ToR uplink, the share that found it already carrying another job
# flow, the share that found more flows than it carries at full NIC speed, the most on one uplink.
#
# Usage: bench/ecmp_tor_design.sh [BUILD_DIR] [SEEDS...]   (default: build, seeds 1 2 3)
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${1:-$root/build}"
shift || true
seeds=("$@")
[ ${#seeds[@]} -eq 0 ] && seeds=(1 2 3)
bin="$build/megascale"
[ -x "$bin" ] || { echo "no megascale binary in $build (build the megascale target)" >&2; exit 1; }
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

printf '%-8s %-5s %-9s %-9s %-13s %-8s %-15s %-10s\n' design seed step_s mfu uplink_flows shared over_capacity max_on_one
for design in split unsplit; do
  for seed in "${seeds[@]}"; do
    scenario="$work/$design-$seed.textproto"
    sed -e "/^sim {/,/^}/d" "$root/scenarios/faults-ecmp-tor-$design-1024.textproto" > "$scenario"
    echo "sim { seed: $seed }" >> "$scenario"
    "$bin" simulate "$scenario" --json > "$work/out.json" 2> "$work/err.txt"
    done_line=$(grep '^\[sim\] done' "$work/err.txt")
    # "... ToR uplinks: N flows, X% shared, Y% over capacity, max M on one"
    flows=$(sed -E 's/.*ToR uplinks: ([0-9]+) flows.*/\1/' <<< "$done_line")
    shared=$(sed -E 's/.* ([0-9.]+)% shared.*/\1/' <<< "$done_line")
    over=$(sed -E 's/.* ([0-9.]+)% over capacity.*/\1/' <<< "$done_line")
    max=$(sed -E 's/.*max ([0-9]+) on one.*/\1/' <<< "$done_line")
    read -r step mfu < <(jq -r '"\(.iteration_time_s * 10000 | round / 10000) \(.mfu * 1000 | round / 10)%"' "$work/out.json")
    printf '%-8s %-5s %-9s %-9s %-13s %-8s %-15s %-10s\n' "$design" "$seed" "$step" "$mfu" "$flows" "$shared%" "$over%" "$max"
  done
done
