#include "tests/planner/vtrain_rows.h"

#include <cstdlib>
#include <map>

#include "planner/scenario_io.h"
#include "planner/validate.h"

namespace megascale::testing {
namespace {

// The template's fields and the file's columns they come from (its header line starts with '#',
// which the CSV reader keeps in the name); bench/vtrain_check.py's scenario_fields fills the same.
const std::map<std::string, std::string>& Columns() {
  static const std::map<std::string, std::string> kColumns = {
      {"gpus", "# GPUs"},
      {"layers", "# layers"},
      {"hidden", "hidden size"},
      {"heads", "attention heads"},
      {"seq", "sequence length"},
      {"global_batch", "global batch"},
      {"micro_batch", "micro batch"},
      {"tp", "tensor parallelism"},
      {"pp", "pipeline parallelism"},
      {"dp", "data parallelism"},
  };
  return kColumns;
}
constexpr char kTimeColumn[] = "iteration time (ms)";

// `text` with every ${name} replaced by fields[name]; InvalidInput naming one it has no value for.
Result<std::string> Fill(const std::string& text, const std::map<std::string, std::string>& fields) {
  std::string out;
  size_t at = 0;
  while (true) {
    const size_t open = text.find("${", at);
    if (open == std::string::npos) break;
    const size_t close = text.find('}', open);
    if (close == std::string::npos) break;
    const std::string name = text.substr(open + 2, close - open - 2);
    auto it = fields.find(name);
    if (it == fields.end()) {
      return Status::InvalidInput("bench/vtrain_scenario.tmpl: placeholder ${" + name + "} has no value");
    }
    out += text.substr(at, open - at) + it->second;
    at = close + 1;
  }
  return out + text.substr(at);
}

}  // namespace

Result<std::vector<ReferenceRun>> VtrainRuns(const std::vector<CsvRow>& rows, const std::string& template_text) {
  std::vector<ReferenceRun> out;
  for (size_t i = 0; i < rows.size(); ++i) {
    const CsvRow& r = rows[i];
    const std::string where = "vTrain row " + std::to_string(i + 1);
    std::map<std::string, std::string> fields = {{"index", std::to_string(i)}, {"kernels", ""}};
    for (const auto& [field, col] : Columns()) {
      auto it = r.find(col);
      if (it == r.end() || it->second.empty()) {
        return Status::InvalidInput(where + ": column \"" + col + "\" is missing or empty");
      }
      fields[field] = it->second;
    }
    const int gpus = std::atoi(fields["gpus"].c_str());
    fields["gpus_per_node"] = std::to_string(gpus < 8 ? gpus : 8);
    MS_ASSIGN_OR_RETURN(std::string text, Fill(template_text, fields));
    MS_ASSIGN_OR_RETURN(Scenario parsed, ParseScenario(text, where));
    MS_ASSIGN_OR_RETURN(Scenario resolved, ResolveScenario(parsed));
    ReferenceRun run;
    run.label = "vTrain " + fields["tp"] + "x" + fields["pp"] + "x" + fields["dp"] + " h" + fields["hidden"] + " L" +
                fields["layers"] + " mb" + fields["micro_batch"] + "/" + fields["global_batch"];
    run.source = kVtrainSource;
    run.scenario = resolved;
    run.layout = "tp" + fields["tp"] + " pp" + fields["pp"] + " dp" + fields["dp"] + " mb" + fields["micro_batch"];
    auto time = r.find(kTimeColumn);
    run.measured_s = time == r.end() ? 0 : std::atof(time->second.c_str()) / 1000;
    if (!(run.measured_s > 0)) {
      return Status::InvalidInput(where + ": " + kTimeColumn + " = " + (time == r.end() ? "(missing)" : time->second) +
                                  ": must be a positive number");
    }
    out.push_back(std::move(run));
  }
  return out;
}

}  // namespace megascale::testing
