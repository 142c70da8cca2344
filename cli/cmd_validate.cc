#include <google/protobuf/text_format.h>

#include <iostream>

#include "cli/commands.h"
#include "cli/views.h"
#include "planner/plan_builder.h"
#include "planner/search.h"
#include "planner/search_inverse.h"

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
  std::string text;
  google::protobuf::TextFormat::PrintToString(scenario, &text);
  std::cout << "# " << args.scenario << " is valid; resolved with every default:\n" << text;
  return Status::Ok();
}

}  // namespace megascale::cli
