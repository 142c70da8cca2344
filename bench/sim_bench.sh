#!/usr/bin/env bash
# Simulator speed benchmark: one step of MegaScale's 175B job (scenarios/megascale-175b-12288,
# same model, layout, fabric and 32 micro-batches per DP replica) at 1,024, 3,072 and 12,288 GPUs,
# i.e. DP 16, 48 and 192. Prints, per size: wall time and peak memory (/usr/bin/time -v, the
# whole process: planning, platform, simulation), the simulator's own wall time, network
# activities (SimGrid flows) and activities per second of simulation wall time, and the
# simulated step time.
#
# Usage: bench/sim_bench.sh [BUILD_DIR] [GPUS...]   (default: build, 1024 3072 12288)
# No assertion: it measures. Timings depend on what else runs on the machine.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${1:-$root/build}"
shift || true
sizes=("$@")
[ ${#sizes[@]} -eq 0 ] && sizes=(1024 3072 12288)
bin="$build/megascale"
[ -x "$bin" ] || { echo "no megascale binary in $build (build the megascale target)" >&2; exit 1; }
base="$root/scenarios/megascale-175b-12288.textproto"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

printf '%-7s %-5s %-8s %-8s %-10s %-9s %-11s %-10s %-8s\n' GPUs DP wall_s cpu_s sim_wall_s peak_MiB activities act_per_s step_s
for gpus in "${sizes[@]}"; do
  dp=$((gpus / 64))                      # TP 8 x PP 8 per replica
  batch=$((dp * 32))                     # 32 micro-batches of 1 per replica, as at 12,288 GPUs
  scenario="$work/bench-$gpus.textproto"
  sed -e "s/^name: .*/name: \"bench-175b-$gpus\"/" \
      -e "s/num_gpus: 12288/num_gpus: $gpus/" \
      -e "s/dp: 192/dp: $dp/" \
      -e "s/global_batch: 6144/global_batch: $batch/" "$base" > "$scenario"
  /usr/bin/time -v "$bin" simulate "$scenario" --json -q > "$work/out.json" 2> "$work/time.txt"
  wall=$(grep "Elapsed (wall clock)" "$work/time.txt" | awk '{print $NF}' |
         awk -F: '{ if (NF == 3) print $1 * 3600 + $2 * 60 + $3; else print $1 * 60 + $2 }')
  rss_kb=$(grep "Maximum resident set size" "$work/time.txt" | awk '{print $NF}')
  cpu=$(grep -E "(User|System) time" "$work/time.txt" | awk '{s += $NF} END {printf "%.2f", s}')
  jq -r --arg gpus "$gpus" --arg dp "$dp" --arg wall "$wall" --arg cpu "$cpu" --arg rss "$rss_kb" \
     '[$gpus, $dp, $wall, $cpu, (.sim.wall_s * 100 | round / 100), ($rss | tonumber / 1024 | round),
       .sim.network_activities, (.sim.network_activities / .sim.wall_s | round),
       (.iteration_time_s * 10000 | round / 10000)] | @tsv' "$work/out.json" |
    awk -F'\t' '{ printf "%-7s %-5s %-8s %-8s %-10s %-9s %-11s %-10s %-8s\n", $1, $2, $3, $4, $5, $6, $7, $8, $9 }'
done
