#!/usr/bin/env bash
# Hostile inputs, one of each kind the readers refuse, run through the CLI: each must give one
# line `megascale: error: ...`, exit 2, within a second and under 200 MB (peak RSS, /usr/bin/time).
# Prints one row per input (exit code, wall, peak MiB, the message) and exits 1 if any row fails.
# The messages and exit codes are also asserted by the suites (tests/cli/bad_input_test.cc,
# diagnose_cli_test.cc, output_files_test.cc); time and memory are measured here, not in a test.
# Usage: bench/hostile_inputs.sh [BUILD_DIR]
set -uo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="$(cd "${1:-$root/build}" && pwd)"
ms="$build/megascale"
[[ -x "$ms" ]] || { echo "build megascale in '$build' first" >&2; exit 1; }
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cd "$work"

# --- inputs -------------------------------------------------------------------------------------
scenario() {  # NAME EXTRA-TEXT [REPLACE-FROM REPLACE-TO]
  local text='name: "hostile"
cluster { gpu: "A100" num_gpus: 64 }
model { preset: "gpt-tiny" }
training { global_batch: 64 micro_batch: 1 }
layout { tp: 2 pp: 2 dp: 16 }
'
  [[ $# -ge 4 ]] && text="${text/"$3"/"$4"}"
  printf '%s%s\n' "$text" "$2" > "$1.textproto"
}
scenario nodes_per_tor_1e9 "" 'num_gpus: 64' 'num_gpus: 64 nodes_per_tor: 1000000000'
scenario nodes_per_tor_int_max "" 'num_gpus: 64' 'num_gpus: 64 nodes_per_tor: 2147483647'
scenario batch_2_20 "" 'global_batch: 64' 'global_batch: 1048576'
scenario batch_2_40 "" 'global_batch: 64' 'global_batch: 1099511627776'
scenario layers_1e6 "" 'preset: "gpt-tiny"' 'preset: "gpt-tiny" layers: 1000000'
scenario nic_inf "" 'num_gpus: 64' 'num_gpus: 64 nic_gbps: inf'
scenario peak_nan "" 'num_gpus: 64' 'num_gpus: 64 peak_tflops: nan'
scenario fault_time_inf 'faults { failures { rank: 3 time_s: inf } }'
scenario ettr_draws 'reliability { failures_per_gpu_day: 1 days: 3650 trials: 100000 }'
scenario ok ""
scenario ettr_ok 'reliability { }'
scenario run1 'run { device: "cpu" }' 'num_gpus: 64 }' 'num_gpus: 1 gpus_per_node: 1 }'
sed -i 's/global_batch: 64/global_batch: 2/; s/tp: 2 pp: 2 dp: 16/tp: 1 pp: 1 dp: 1/' run1.textproto

csv="$root/tests/fuzz/corpus/timer_trace/dp2-pp2.csv"
meta="$root/tests/fuzz/corpus/timer_meta/studies.yaml"
# Row 2's fields: dp_rank,stage,rank,step,optype,start_ts,duration,...
row_edit() {  # NAME AWK-ASSIGNMENT
  awk -F, -v OFS=, "NR == 2 { $2 } { print }" "$csv" > "$1.csv"
}
row_edit start_ts_abc '$6 = "abc"'
row_edit start_ts_neg '$6 = "-1e300"'
row_edit duration_inf '$7 = "inf"'
meta_json() {  # NAME JSON-EXTRA
  printf '{"dp": 2, "pp": 2, "tp": 2, "cp": 1, "vpp": 1, %s}\n' "$2" > "$1.json"
}
meta_json name_number '"scenario_name": 7'
meta_json gpu_list '"gpu": ["A100"]'
meta_json peak_string '"peak_flops_per_gpu": "lots"'
meta_json peak_nan '"peak_flops_per_gpu": NaN'
meta_json flops_negative '"model_flops_per_step": -1e15, "peak_flops_per_gpu": 312e12'
meta_json tokens_negative '"tokens_per_step": -4096'
printf '{"dp": 2, "pp": 2, "tp": 2147483647, "cp": 1, "vpp": 1}\n' > tp_int_max.json

event='{"name":"x","cat":"COMPUTE","ph":"X","ts":%s,"dur":%s,"pid":%s,"tid":0,"args":{"step":0,"op_id":%d}}'
chrome() {  # NAME HEADER-JSON PID DUR COUNT
  local events=() i
  for ((i = 0; i < $5; ++i)); do
    # shellcheck disable=SC2059
    events+=("$(printf "$event" "$((i * 10))" "$4" "$3" "$i")")
  done
  local IFS=,
  printf '{"otherData":{"header":%s},"traceEvents":[%s]}\n' "$2" "${events[*]}" > "$1.json"
}
small='{"tp":1,"pp":1,"dp":2,"world_size":2}'
chrome pid_int_max "$small" 2147483647 5 1
chrome dur_negative "$small" 0 -5 1
chrome million_ranks '{"tp":1,"pp":1,"dp":1000000,"world_size":1000000}' 0 5 8
# The same with events megascale knows: a legitimate (if odd) trace of one recorded rank out of a
# declared million, diagnosed (exit 0) in time and memory linear in what the file holds.
sed 's/"name":"x"/"name":"EMBEDDING fwd mb0"/g' million_ranks.json > million_ranks_ops.json
echo '{}' > empty_object.json
"$ms" simulate -q ok.textproto --trace ok.trace >/dev/null 2>&1 || { echo "simulate of the valid scenario failed" >&2; exit 1; }

# --- runs ---------------------------------------------------------------------------------------
fail=0
printf '%-28s %4s %7s %8s  %s\n' input exit wall_s peak_MiB message
check() {  # NAME ARGS...   (exit code $want, 2 unless set; one error line when 2)
  local name="$1"; shift
  /usr/bin/time -f "%e %M" -o time.txt "$ms" "$@" >out.txt 2>err.txt
  local rc=$? wall rss lines msg verdict=ok
  read -r wall rss < <(tail -1 time.txt)
  lines=$(grep -c . err.txt)
  msg=$(head -1 err.txt)
  local prefix="megascale: error: "
  [[ ${want:-2} -eq 0 ]] && { lines=1; prefix=""; msg="(stdout) $(head -1 out.txt)"; }
  if [[ $rc -ne ${want:-2} || $lines -ne 1 || "$msg" != "$prefix"* ]] ||
     awk -v w="$wall" -v r="$rss" 'BEGIN { exit !(w >= 1 || r >= 200 * 1024) }'; then
    verdict=FAIL
    fail=1
  fi
  printf '%-28s %4d %7.2f %8.1f  %s%s\n' "$name" "$rc" "$wall" "$(awk -v r="$rss" 'BEGIN { print r / 1024 }')" \
    "$([[ $verdict == FAIL ]] && echo "FAIL ($lines lines) ")" "${msg:0:110}"
}
for s in nodes_per_tor_1e9 nodes_per_tor_int_max batch_2_20 batch_2_40 layers_1e6 nic_inf peak_nan fault_time_inf; do
  check "plan $s" plan "$s.textproto"
  check "validate $s" validate "$s.textproto"
done
check "ettr ettr_draws" ettr ettr_draws.textproto
for c in start_ts_abc start_ts_neg duration_inf; do check "timer csv $c" diagnose -q "$c.csv" --meta "$meta"; done
for m in name_number gpu_list peak_string peak_nan flops_negative tokens_negative tp_int_max; do
  check "timer meta $m" diagnose -q "$csv" --meta "$m.json"
done
for c in pid_int_max dur_negative million_ranks empty_object; do check "chrome $c" diagnose -q "$c.json"; done
want=0 check "chrome million_ranks_ops" diagnose -q million_ranks_ops.json
check "files diagnose X --html X" diagnose -q ok.trace --html ok.trace
check "files export X --chrome X" export ok.trace --chrome ok.trace
check "files --trace ''" simulate -q ok.textproto --trace ''
check "files simulate no folder" simulate -q ok.textproto --trace missing/x.trace
check "files diagnose no folder" diagnose -q ok.trace --html missing/x.html
check "files export no folder" export ok.trace --chrome missing/x.json
check "files ettr no folder" ettr ettr_ok.textproto --csv missing/x.csv
check "files sweep no folder" sweep ok.textproto --csv missing/x.csv
check "files run no folder" run -q run1.textproto --trace missing/x.trace
check "run --steps 2^31-1" run -q run1.textproto --steps 2147483647
exit "$fail"
