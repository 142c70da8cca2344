#include <google/protobuf/text_format.h>

#include <iostream>

#include "cli/commands.h"
#include "cli/views.h"
#include "planner/program/plan_builder.h"
#include "planner/search/search.h"
#include "planner/search/search_inverse.h"
#include "planner/spec/scenario_io.h"
#include "planner/spec/stack_presets.h"
#include "planner/spec/validate_run.h"

namespace megascale::cli {

Status RunValidate(const ValidateArgs& args) {
  MS_ASSIGN_OR_RETURN(Scenario scenario, LoadResolvedScenario(args.scenario));
  // Every check `plan` makes (the cluster graph, the schedule; with search.enabled, the search
  // itself, which fails when no layout fits): what validate accepts, plan builds.
  if (!scenario.search().enabled()) {
    MS_RETURN_IF_ERROR(BuildPlan(scenario).status());
  } else if (scenario.search().token_budget() > 0) {
    MS_RETURN_IF_ERROR(SmallestCluster(scenario).status());
  } else {
    MS_RETURN_IF_ERROR(SearchLayouts(scenario).status());
  }
  std::string note;
  // The scenario as written, with what its stack fills in (the switches it left unset), once.
  MS_ASSIGN_OR_RETURN(Scenario raw, LoadScenario(args.scenario));
  MS_ASSIGN_OR_RETURN(const std::vector<std::string> stack_set, ApplyStack(&raw));
  if (scenario.search().enabled()) {
    // The search may have put a candidate in place of the user's layout (and fewer GPUs, another
    // micro-batch) to check the rest; what prints is the user's own, as written (the stack's
    // switches are the user's choice too).
    *scenario.mutable_layout() = raw.layout();
    scenario.mutable_cluster()->set_num_gpus(raw.cluster().num_gpus());
    if (raw.training().has_micro_batch()) {
      scenario.mutable_training()->set_micro_batch(raw.training().micro_batch());
    } else {
      scenario.mutable_training()->clear_micro_batch();
    }
    if (!raw.search().has_max_gpus()) scenario.mutable_search()->clear_max_gpus();
    note = "# layout as written: search.enabled chooses the rest (megascale plan prints the choice)\n";
  }
  if (!scenario.stack().empty()) {
    for (const StackPreset& p : StackPresets()) {
      if (scenario.stack() == p.name) note += "# stack \"" + scenario.stack() + "\": " + p.what + "\n";
    }
    note += stack_set.empty() ? "#   it sets nothing here: the scenario sets every switch itself\n" : "#   it sets:\n";
    for (const std::string& line : stack_set) note += "#     " + line + "\n";
  }
  // A scenario with a run block was held to what the executor runs (validation::CheckRunnable);
  // one without may still be handed to `megascale run`, which would refuse it for the same rule.
  if (!scenario.has_run() && !scenario.search().enabled()) {
    const Status runnable = validation::CheckRunnable(scenario.model(), scenario.layout(), scenario.training());
    if (!runnable.ok()) note += "# megascale run would refuse it (plan and simulate take it): " + runnable.message() + "\n";
  }
  std::string text;
  google::protobuf::TextFormat::PrintToString(scenario, &text);
  std::cout << "# " << args.scenario << " is valid; resolved with every default:\n" << note << text;
  return Status::Ok();
}

}  // namespace megascale::cli
