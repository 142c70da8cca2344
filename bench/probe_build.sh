# Sourced by bench/shape_check.sh and bench/layer_check.sh: what both do before replaying a stored
# GPU run against the model.
#   probe_gpu DEVICE       the catalogue GPU a device name (nvidia-smi's, torch's) is, or nothing
#   probe_build ROOT BUILD NAME
#                          compiles bench/NAME.cc against BUILD's libraries into BUILD/NAME when
#                          it is missing or older than its source or the planner library
probe_gpu() {
  local g
  for g in H200 H100 H800 A100 A800; do
    if [[ "$1" == *"$g"* ]]; then echo "$g"; return; fi
  done
}

probe_build() {
  local root="$1" build="$2" name="$3"
  local probe="$build/$name"
  [[ -f "$build/libms_planner.a" ]] || { echo "build megascale in '$build' first" >&2; return 1; }
  if [[ ! -x "$probe" || "$root/bench/$name.cc" -nt "$probe" || "$build/libms_planner.a" -nt "$probe" ]]; then
    g++ -std=c++17 -O2 -Wall -Wextra -I"$root" -I"$build/gen" "$root/bench/$name.cc" -o "$probe" \
      "$build/libms_planner.a" "$build/libms_topology.a" "$build/libms_base.a" "$build/libms_proto.a" \
      -lprotobuf -lpthread
  fi
}
