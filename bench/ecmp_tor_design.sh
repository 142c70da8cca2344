#!/usr/bin/env bash
# MegaScale's ToR design against an unsplit one, on the 175B job at 1,024 GPUs, with NCCL's DP
# traffic in 1 channel or more:
#   split:     400G ToR ports split into 2 x 200G, 64 nodes per ToR set (scenarios/faults-ecmp-tor-split-1024)
#   unsplit:   one full 400G port per 200G NIC, 32 nodes per ToR set (scenarios/faults-ecmp-tor-unsplit-1024)
#   dp-across: unsplit, DP replicas outermost so DP rings cross ToRs (scenarios/faults-ecmp-tor-dp-across-1024);
#              in the other two the DP rings stay under one ToR set and channels change no uplink's load
# For each design, each channel count (cluster.collectives.channels: every DP transfer split into
# that many flows, each with its own ECMP hash) and each ECMP seed given (sim.seed picks the hash),
# prints the simulated step time and the ECMP collision figures the simulator counts as the job's
# flows start (sim/simulator.h SimStats): flows that crossed a ToR uplink, the share that found it
# already carrying another job flow, the share that found it carrying more than it does at full
# NIC speed (a channel's flow weighs 1/channels of a NIC-speed flow), the most on one uplink (in
# NIC-speed flows). What to look for: more channels spread each pair's traffic over more uplinks,
# so the over-capacity share and the step time's spread over seeds shrink.
#
# Usage: bench/ecmp_tor_design.sh [BUILD_DIR] [SEEDS...]   (default: build, seeds 1 2 3)
#        CHANNELS="1 4" (default) picks the channel counts.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${1:-$root/build}"
shift || true
seeds=("$@")
[ ${#seeds[@]} -eq 0 ] && seeds=(1 2 3)
read -r -a channel_counts <<< "${CHANNELS:-1 4}"
bin="$build/megascale"
[ -x "$bin" ] || { echo "no megascale binary in $build (build the megascale target)" >&2; exit 1; }
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

printf '%-8s %-8s %-5s %-9s %-9s %-13s %-8s %-15s %-10s\n' design channels seed step_s mfu uplink_flows shared over_capacity max_on_one
for design in split unsplit dp-across; do
  for channels in "${channel_counts[@]}"; do
    for seed in "${seeds[@]}"; do
      scenario="$work/$design-$channels-$seed.textproto"
      sed -e "/^sim {/,/^}/d" -e "/^  collectives {/,/^  }/d" \
        -e "/^cluster {/a\\  collectives { channels: $channels }" \
        "$root/scenarios/faults-ecmp-tor-$design-1024.textproto" > "$scenario"
      echo "sim { seed: $seed }" >> "$scenario"
      "$bin" simulate "$scenario" --json > "$work/out.json" 2> "$work/err.txt"
      done_line=$(grep '^\[sim\] done' "$work/err.txt")
      # "... ToR uplinks: N flows, X% shared, Y% over capacity, max M on one"
      flows=$(sed -E 's/.*ToR uplinks: ([0-9]+) flows.*/\1/' <<< "$done_line")
      shared=$(sed -E 's/.* ([0-9.]+)% shared.*/\1/' <<< "$done_line")
      over=$(sed -E 's/.* ([0-9.]+)% over capacity.*/\1/' <<< "$done_line")
      max=$(sed -E 's/.*max ([0-9]+) on one.*/\1/' <<< "$done_line")
      read -r step mfu < <(jq -r '"\(.iteration_time_s * 10000 | round / 10000) \(.mfu * 1000 | round / 10)%"' "$work/out.json")
      printf '%-8s %-8s %-5s %-9s %-9s %-13s %-8s %-15s %-10s\n' "$design" "$channels" "$seed" "$step" "$mfu" "$flows" "$shared%" "$over%" "$max"
    done
  done
done
