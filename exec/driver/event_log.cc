#include "exec/driver/event_log.h"

#include <cstdio>

namespace megascale::exec {
namespace {

std::string Describe(const nlohmann::json& d) {
  std::string s;
  for (const auto& [k, v] : d.items()) {
    if (k == "t_s" || k == "event") continue;
    s += k + "=" + (v.is_string() ? v.get<std::string>() : v.dump()) + " ";
  }
  return s;
}

}  // namespace

EventLog::EventLog(const std::string& path, bool quiet) : quiet_(quiet) {
  if (!path.empty()) out_.open(path);
}

void EventLog::Add(double t, const std::string& what, nlohmann::json detail) {
  detail["t_s"] = t;
  detail["event"] = what;
  if (out_.is_open()) out_ << detail.dump() << "\n" << std::flush;
  if (!quiet_) std::fprintf(stderr, "launch: %7.2f s  %s %s\n", t, what.c_str(), Describe(detail).c_str());
}

}  // namespace megascale::exec
