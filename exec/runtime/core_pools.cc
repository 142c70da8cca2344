#include "exec/runtime/core_pools.h"

#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <map>
#include <utility>

namespace megascale {
namespace exec {
namespace {

// "host cpu,cpu,...": where this process may run.
std::string Placement() {
  char host[256] = {0};
  if (gethostname(host, sizeof(host) - 1) != 0) host[0] = '\0';
  std::string out = std::string(host) + " ";
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) != 0) return out + "?";
  for (int c = 0; c < CPU_SETSIZE; ++c) {
    if (CPU_ISSET(c, &set)) out += std::to_string(c) + ",";
  }
  return out;
}

int CoresIn(const std::string& placement) {
  int cores = 0;
  for (char ch : placement.substr(placement.find(' ') + 1)) cores += ch == ',';
  return cores;
}

}  // namespace

Result<std::vector<CorePool>> MeasureCorePools(Communicator* world) {
  std::vector<std::string> all;
  MS_RETURN_IF_ERROR(world->GatherBytes(Placement(), &all, 0));
  std::vector<CorePool> pools;
  if (world->rank() != 0) return pools;
  std::map<std::string, std::vector<int>> by_placement;
  for (size_t r = 0; r < all.size(); ++r) by_placement[all[r]].push_back(static_cast<int>(r));
  for (const auto& [placement, ranks] : by_placement) {
    const int cores = CoresIn(placement);
    if (cores < 1 || static_cast<int>(ranks.size()) <= cores) continue;  // unknown, or a core each
    CorePool p;
    for (int r : ranks) p.add_ranks(r);
    p.set_cores(cores);
    pools.push_back(std::move(p));
  }
  std::sort(pools.begin(), pools.end(), [](const CorePool& a, const CorePool& b) { return a.ranks(0) < b.ranks(0); });
  return pools;
}

std::string CorePoolsText(const std::vector<CorePool>& pools) {
  if (pools.empty()) return "no ranks share cores";
  std::string out;
  for (const CorePool& p : pools) {
    if (!out.empty()) out += "; ";
    out += "ranks";
    for (int r : p.ranks()) out += " " + std::to_string(r);
    out += " share " + std::to_string(p.cores()) + (p.cores() == 1 ? " core" : " cores");
  }
  return out;
}

}  // namespace exec
}  // namespace megascale
