#!/usr/bin/env bash
# Fuzzes the readers: builds the libFuzzer targets of tests/fuzz with clang 14, ASan and
# UBSan in ./build-fuzz (installing clang-14 and its runtime from Debian's packages if missing), then
# runs each target for SECONDS (default 12: about a minute for all five, what CI spends), seeded from
# tests/fuzz/corpus/<target> (and scenarios/ for the scenario target). Prints per target the runs,
# the coverage (edges, features), the corpus size and the runs per second.
# A crash, hang or leak: libFuzzer saves the input under fuzz-out/<target>/ and this script exits 1;
# copy it to tests/fuzz/regressions/<target>/ (fuzz_tests replays it in the ordinary build) with the fix.
#   scripts/fuzz.sh [SECONDS_PER_TARGET | --runs N] [TARGET ...]
# --runs N: N inputs a target from seed 1 instead of a time: the same inputs on every machine (CI).
set -euo pipefail
cd "$(dirname "$0")/.."
limit=(-max_total_time="${1:-12}")
seconds="${1:-12}"
if [[ "${1:-}" == --runs ]]; then
  limit=(-runs="$2" -seed=1)
  seconds=""
  shift 2
else
  shift || true
fi
targets=("$@")
[[ ${#targets[@]} -gt 0 ]] || targets=(scenario timer_trace timer_meta chrome_trace native_trace)

missing=()
for p in clang-14 libclang-rt-14-dev; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [[ ${#missing[@]} -gt 0 ]]; then
  SUDO=""
  [[ "$(id -u)" -eq 0 ]] || SUDO="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
bash scripts/install-deps.sh >/dev/null
jobs=$(nproc 2>/dev/null || echo 2)
cmake -S . -B build-fuzz -DCMAKE_BUILD_TYPE=RelWithDebInfo -DMEGASCALE_FUZZ=ON -DMEGASCALE_TESTS=OFF \
  -DCMAKE_CXX_COMPILER=clang++-14 -DCMAKE_C_COMPILER=clang-14 >build-fuzz-configure.log 2>&1 || {
  cat build-fuzz-configure.log; exit 1; }
cmake --build build-fuzz -j"$jobs" >/dev/null

status=0
export TMPDIR="$(mktemp -d)"
trap 'rm -rf "$TMPDIR"' EXIT
for t in "${targets[@]}"; do
  out="fuzz-out/$t"
  mkdir -p "$out/corpus"
  cp -n tests/fuzz/corpus/"$t"/* "$out/corpus/" 2>/dev/null || true
  [[ "$t" == scenario ]] && cp -n scenarios/*.textproto "$out/corpus/"
  log="$out/last.log"
  start=$(date +%s)
  if ! build-fuzz/fuzz_"$t" "$out/corpus" "${limit[@]}" -timeout=10 -rss_limit_mb=2048 \
        -max_len=100000 -print_final_stats=1 -artifact_prefix="$out/" >"$log" 2>&1; then
    status=1
    echo "fuzz_$t: FOUND A PROBLEM; input and log in $out/ (last lines below)"
    tail -20 "$log"
  fi
  took=$(( $(date +%s) - start ))
  [[ $took -gt 0 ]] || took=1
  runs=$(grep -o 'stat::number_of_executed_units: [0-9]*' "$log" | awk '{print $2}')
  cov=$(grep -E '^#[0-9]+' "$log" | tail -1 | grep -o 'cov: [0-9]* ft: [0-9]* corp: [0-9]*' || true)
  echo "fuzz_$t: ${runs:-?} runs in ${took} s ($(( ${runs:-0} / took ))/s), ${cov:-no coverage line}"
done
exit "$status"
