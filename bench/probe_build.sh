# Sourced by bench/shape_check.sh and bench/layer_check.sh: what both do before replaying a stored
# GPU run against the model.
#   probe_gpu FILE         the catalogue GPU a stored run ran on (its "device": of a JSON file, or
#                          of the first line of a JSON-lines file); exits naming the file if none
#   probe_build ROOT BUILD NAME
#                          compiles bench/NAME.cc against BUILD's libraries into BUILD/NAME when
#                          it is missing or older than its source, bench/probe_scenario.h or
#                          the planner library
probe_gpu() {
  local device g
  device=$(/usr/bin/python3 -c '
import json, sys
text = open(sys.argv[1]).read()
try:
    print(json.loads(text)["device"])
except ValueError:
    print(json.loads(text.splitlines()[0])["device"])' "$1" 2>/dev/null) || { echo "$1: not a stored run (no \"device\")" >&2; exit 1; }
  for g in H200 H100 H800 A100 A800; do
    if [[ "$device" == *"$g"* ]]; then echo "$g"; return; fi
  done
  echo "$1: its device ($device) is no catalogue GPU" >&2
  exit 1
}

probe_build() {
  local root="$1" build="$2" name="$3"
  local probe="$build/$name"
  # The planner's layers, top first (static libraries link in order), and what they stand on.
  local libs=("$build"/libms_planner_{fit,search,program,cost,spec}.a "$build"/libms_topology.a "$build"/libms_base.a
              "$build"/libms_proto.a)
  [[ -f "${libs[0]}" ]] || { echo "build megascale in '$build' first" >&2; return 1; }
  local source
  local stale=0
  [[ -x "$probe" ]] || stale=1
  for source in "$root/bench/$name.cc" "$root/bench/probe_scenario.h" "${libs[@]:0:5}"; do
    [[ "$source" -nt "$probe" ]] && stale=1
  done
  if [[ $stale == 1 ]]; then
    g++ -std=c++17 -O2 -Wall -Wextra -I"$root" -I"$build/gen" "$root/bench/$name.cc" -o "$probe" \
      "${libs[@]}" -lprotobuf -lpthread
  fi
}
