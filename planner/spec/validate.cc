#include "planner/spec/validate.h"

#include "planner/spec/stack_presets.h"
#include "planner/spec/validate_run.h"
#include "planner/spec/validate_search.h"
#include "planner/spec/validate_util.h"

namespace megascale {

Result<Scenario> ResolveScenario(const Scenario& input) {
  Scenario s = input;
  if (!s.has_name() || s.name().empty()) {
    return Status::InvalidInput("name is missing: every scenario needs a short name, e.g. name: \"my-run\"");
  }
  if (!s.has_model()) {
    return Status::InvalidInput("model is missing: add model { preset: \"gpt-175b\" } or give its sizes");
  }
  if (!s.has_cluster()) {
    return Status::InvalidInput("cluster is missing: add cluster { gpu: \"A100\" num_gpus: N }");
  }
  MS_RETURN_IF_ERROR(ApplyStack(&s).status());  // before the layout's defaults and the search
  MS_RETURN_IF_ERROR(validation::ResolveCluster(s.mutable_cluster()));
  MS_RETURN_IF_ERROR(validation::ResolveModel(s.mutable_model()));
  MS_RETURN_IF_ERROR(validation::ResolveSearch(&s));  // may choose the layout (search.enabled)
  MS_RETURN_IF_ERROR(validation::DefaultDataParallel(s.cluster(), s.mutable_layout()));
  MS_RETURN_IF_ERROR(validation::ResolveLayout(s.cluster(), s.model(), s.mutable_layout()));
  MS_RETURN_IF_ERROR(validation::ResolveTraining(s.model(), s.layout(), s.mutable_training()));
  MS_RETURN_IF_ERROR(validation::ResolveFaults(s.cluster(), s.mutable_faults()));
  MS_RETURN_IF_ERROR(validation::ResolveSim(s.cluster(), s.mutable_sim()));
  MS_RETURN_IF_ERROR(validation::ResolveOutputs(s.mutable_outputs()));
  // Only a scenario meant for `megascale run` carries the block (others print without it).
  if (s.has_run()) {
    RunSpec run = s.run();
    MS_RETURN_IF_ERROR(validation::ResolveRun(s, &run));
    *s.mutable_run() = run;
  }
  if (s.has_reliability()) MS_RETURN_IF_ERROR(validation::ResolveReliability(s.cluster(), s.mutable_reliability()));
  return s;
}

}  // namespace megascale
