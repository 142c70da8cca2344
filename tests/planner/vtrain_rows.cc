#include "tests/planner/vtrain_rows.h"

#include <cstdlib>

#include "planner/scenario_io.h"
#include "planner/validate.h"

namespace megascale::testing {
namespace {

// The file's columns (its header line starts with '#', which the CSV reader keeps in the name).
constexpr const char* kColumns[] = {"# GPUs", "global batch", "micro batch", "hidden size",
                                    "attention heads", "# layers", "sequence length",
                                    "tensor parallelism", "data parallelism", "pipeline parallelism",
                                    "iteration time (ms)"};

}  // namespace

Result<std::vector<ReferenceRun>> VtrainRuns(const std::vector<CsvRow>& rows) {
  std::vector<ReferenceRun> out;
  for (size_t i = 0; i < rows.size(); ++i) {
    const CsvRow& r = rows[i];
    const std::string where = "vTrain row " + std::to_string(i + 1);
    for (const char* col : kColumns) {
      auto it = r.find(col);
      if (it == r.end() || it->second.empty()) {
        return Status::InvalidInput(where + ": column \"" + col + "\" is missing or empty");
      }
    }
    auto v = [&r](const char* col) { return r.at(col); };
    const int gpus = std::atoi(v("# GPUs").c_str());
    const std::string text =
        "name: \"vtrain-" + std::to_string(i) + "\"\n"
        "stack: \"megatron-deepspeed\"\n"
        "cluster { gpu: \"A100\" num_gpus: " + v("# GPUs") + " gpus_per_node: " +
        std::to_string(gpus < 8 ? gpus : 8) + " fabric: NONBLOCKING nvlink_gbytes_per_s: 150 }\n"
        "model { layers: " + v("# layers") + " hidden: " + v("hidden size") + " heads: " +
        v("attention heads") + " seq_len: " + v("sequence length") + " vocab: 50257 }\n"
        "training { global_batch: " + v("global batch") + " micro_batch: " + v("micro batch") + " }\n"
        "layout { tp: " + v("tensor parallelism") + " pp: " + v("pipeline parallelism") + " dp: " +
        v("data parallelism") + " zero_stage: 0 recompute: RECOMPUTE_FULL schedule: ONE_F_ONE_B }\n";
    MS_ASSIGN_OR_RETURN(Scenario parsed, ParseScenario(text, where));
    MS_ASSIGN_OR_RETURN(Scenario resolved, ResolveScenario(parsed));
    ReferenceRun run;
    run.label = "vTrain " + v("tensor parallelism") + "x" + v("pipeline parallelism") + "x" +
                v("data parallelism") + " h" + v("hidden size") + " L" + v("# layers") + " mb" +
                v("micro batch") + "/" + v("global batch");
    run.source = kVtrainSource;
    run.scenario = resolved;
    run.layout = "tp" + v("tensor parallelism") + " pp" + v("pipeline parallelism") + " dp" +
                 v("data parallelism") + " mb" + v("micro batch");
    run.measured_s = std::atof(v("iteration time (ms)").c_str()) / 1000;
    if (!(run.measured_s > 0)) {
      return Status::InvalidInput(where + ": iteration time (ms) = " + v("iteration time (ms)") +
                                  ": must be a positive number");
    }
    out.push_back(std::move(run));
  }
  return out;
}

}  // namespace megascale::testing
