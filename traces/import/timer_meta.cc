#include "traces/import/timer_meta.h"

#include <cmath>
#include <optional>
#include <vector>

#include <yaml-cpp/yaml.h>

#include "base/atomic_file.h"
#include "planner/model.pb.h"
#include "traces/import/timer_optypes.h"
#include "traces/import/trace_import.h"

namespace megascale {
namespace {

// One metadata file's scalar entries, by key, with the spelling the file used.
class MetaKeys {
 public:
  MetaKeys(const YAML::Node& root, std::string path) : root_(root), path_(std::move(path)) {}

  // The value under any of `names` (all spellings must agree when several are present);
  // `used`, if given, gets the spelling the file used.
  Result<std::optional<std::string>> Scalar(const std::vector<const char*>& names,
                                            std::string* used = nullptr) const {
    std::optional<std::string> value;
    std::string first;
    for (const char* name : names) {
      const YAML::Node node = root_[name];
      if (!node) continue;
      if (!node.IsScalar()) return Bad(name, "(not a single value)", "must be a single value");
      const std::string v = node.Scalar();
      if (value && v != *value) {
        return Bad(name, v, "disagrees with \"" + first + "\" = " + *value + " (give one of them)");
      }
      value = v;
      first = name;
    }
    if (used) *used = first;
    return value;
  }

  // A size: an integer >= 1; `fallback` when absent (0: required).
  Result<int> Size(const std::vector<const char*>& names, int fallback) const {
    std::string key;
    MS_ASSIGN_OR_RETURN(std::optional<std::string> v, Scalar(names, &key));
    if (!v) {
      if (fallback > 0) return fallback;
      return Bad(names[0], "missing", "must be an integer >= 1 (" + Spellings(names) + ")");
    }
    char* end = nullptr;
    const long n = std::strtol(v->c_str(), &end, 10);
    if (v->empty() || *end != '\0' || n < 1 || n > (1 << 22)) {
      return Bad(key, *v, "must be an integer >= 1");
    }
    return static_cast<int>(n);
  }

  Result<double> Number(const char* name) const {
    MS_ASSIGN_OR_RETURN(std::optional<std::string> v, Scalar({name}));
    if (!v) return 0.0;
    char* end = nullptr;
    const double x = std::strtod(v->c_str(), &end);
    if (v->empty() || *end != '\0' || !std::isfinite(x) || x < 0) {
      return Bad(name, *v, "must be a number >= 0");
    }
    return x;
  }

  // A name: text. An unquoted number (JSON's 7, YAML's 7) is refused rather than read as "7": such
  // a file was written by something that confused its fields.
  Result<std::optional<std::string>> Text(const std::vector<const char*>& names) const {
    MS_ASSIGN_OR_RETURN(std::optional<std::string> v, Scalar(names));
    if (!v) return v;
    for (const char* name : names) {
      const YAML::Node node = root_[name];
      if (!node || node.Tag() == "!") continue;  // "!": a quoted scalar
      char* end = nullptr;
      std::strtod(node.Scalar().c_str(), &end);
      if (!node.Scalar().empty() && *end == '\0') {
        return Bad(name, node.Scalar(), "must be a text, not a number (quote it: \"" + node.Scalar() + "\")");
      }
    }
    return v;
  }

  Status Bad(const std::string& key, const std::string& value, const std::string& rule) const {
    return Status::InvalidInput("metadata '" + path_ + "': \"" + key + "\" = " + value + ": " + rule);
  }

 private:
  static std::string Spellings(const std::vector<const char*>& names) {
    std::string out;
    for (const char* n : names) out += (out.empty() ? "\"" : " or \"") + std::string(n) + "\"";
    return out;
  }
  YAML::Node root_;
  std::string path_;
};

}  // namespace

Result<TimerMeta> ReadTimerMeta(const std::string& path) {
  MS_ASSIGN_OR_RETURN(std::string text, ReadFile(path));
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    return Status::InvalidInput("metadata '" + path + "' is neither YAML nor JSON: line " +
                                std::to_string(e.mark.line + 1) + ", column " + std::to_string(e.mark.column + 1) +
                                ": " + e.msg);
  }
  if (!root.IsMap()) {
    return Status::InvalidInput("metadata '" + path + "': must be a mapping of keys to values "
                                "(dp_size: 4, pp_size: 4, ...)");
  }
  const MetaKeys keys(root, path);
  TimerMeta meta;
  TraceHeader& h = meta.header;
  h.set_source("import");
  MS_ASSIGN_OR_RETURN(const int dp, keys.Size({"dp_size", "dp"}, 0));
  MS_ASSIGN_OR_RETURN(const int pp, keys.Size({"pp_size", "pp"}, 0));
  MS_ASSIGN_OR_RETURN(const int tp, keys.Size({"tp_size", "tp"}, 0));
  MS_ASSIGN_OR_RETURN(const int cp, keys.Size({"dsp_size", "cp_size", "cp", "dsp"}, 1));
  MS_ASSIGN_OR_RETURN(const int vpp, keys.Size({"vpp_size", "vpp"}, 1));
  const int64_t world = int64_t{dp} * pp * tp * cp;
  if (world > (1 << 20)) return keys.Bad("world_size", std::to_string(world), "must be at most 1,048,576 ranks");
  MS_ASSIGN_OR_RETURN(std::optional<std::string> given_world, keys.Scalar({"world_size"}));
  if (given_world && *given_world != std::to_string(world)) {
    return keys.Bad("world_size", *given_world,
                    "must equal dp x pp x tp x dsp = " + std::to_string(dp) + " x " + std::to_string(pp) + " x " +
                        std::to_string(tp) + " x " + std::to_string(cp) + " = " + std::to_string(world));
  }
  h.set_dp(dp);
  h.set_pp(pp);
  h.set_tp(tp * cp);
  h.set_cp(cp);
  h.set_virtual_stages(vpp);
  h.set_world_size(static_cast<int>(world));

  MS_ASSIGN_OR_RETURN(std::optional<std::string> order_name, keys.Scalar({"rank_order"}));
  RankOrder order = TP_DP_PP;
  if (order_name && !RankOrder_Parse(*order_name, &order)) {
    return keys.Bad("rank_order", *order_name, "must be TP_DP_PP or TP_PP_DP (cp sits next to tp)");
  }
  h.set_rank_order(order);
  MS_ASSIGN_OR_RETURN(std::optional<std::string> name, keys.Text({"scenario_name", "trial_name"}));
  h.set_scenario_name(name.value_or(""));
  MS_ASSIGN_OR_RETURN(std::optional<std::string> gpu, keys.Text({"gpu"}));
  h.set_gpu(gpu.value_or(""));
  MS_ASSIGN_OR_RETURN(const double peak, keys.Number("peak_flops_per_gpu"));
  MS_ASSIGN_OR_RETURN(const double flops, keys.Number("model_flops_per_step"));
  MS_ASSIGN_OR_RETURN(const double hw_flops, keys.Number("hardware_flops_per_step"));
  MS_ASSIGN_OR_RETURN(const double tokens, keys.Number("tokens_per_step"));
  h.set_peak_flops_per_gpu(peak);
  h.set_model_flops_per_step(flops);
  h.set_hardware_flops_per_step(hw_flops);
  h.set_tokens_per_step(static_cast<int64_t>(tokens));
  MS_ASSIGN_OR_RETURN(std::optional<std::string> completed, keys.Scalar({"steps_completed"}));
  if (completed) {
    char* end = nullptr;
    const long n = std::strtol(completed->c_str(), &end, 10);
    if (completed->empty() || *end != '\0' || n < 0) {
      return keys.Bad("steps_completed", *completed, "must be an integer >= 0");
    }
    h.set_steps(static_cast<int>(n));
  }
  if (const YAML::Node groups = root["op_groups"]) {
    if (!groups.IsMap()) return keys.Bad("op_groups", "(not a mapping)", "must map op types to a group");
    for (const auto& entry : groups) {
      const std::string optype = entry.first.as<std::string>();
      const std::string group = entry.second.IsScalar() ? entry.second.Scalar() : "(not a value)";
      const Status ok = CheckOpGroupName(optype, group);
      if (!ok.ok()) return Status::InvalidInput("metadata '" + path + "': " + ok.message());
      meta.op_groups[optype] = group;
    }
  }
  return meta;
}

Result<TraceHeader> ReadTraceMeta(const std::string& meta_path) {
  MS_ASSIGN_OR_RETURN(TimerMeta meta, ReadTimerMeta(meta_path));
  return meta.header;
}

}  // namespace megascale
