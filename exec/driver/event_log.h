// The driver's event log: one JSON object a line in a file (if one is named), each also echoed on
// stderr as "launch: <t> s  <event> key=value ..." (unless quiet). Not thread-safe.
#pragma once

#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

namespace megascale::exec {

class EventLog {
 public:
  EventLog(const std::string& path, bool quiet);
  // The event `what` at `t` seconds since the launch began, with `detail`'s fields.
  void Add(double t, const std::string& what, nlohmann::json detail = nlohmann::json::object());

 private:
  std::ofstream out_;
  bool quiet_;
};

}  // namespace megascale::exec
