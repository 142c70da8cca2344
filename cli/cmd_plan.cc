#include <cstdio>
#include <iostream>

#include "cli/commands.h"
#include "cli/views.h"
#include "planner/plan_builder.h"

namespace megascale::cli {

Status RunPlan(const PlanArgs& args) {
  MS_ASSIGN_OR_RETURN(Scenario scenario, LoadResolvedScenario(args.scenario));
  MS_ASSIGN_OR_RETURN(Plan plan, BuildPlan(scenario));
  const Prediction& p = plan.prediction();
  if (args.json) {
    nlohmann::json out = PredictionJson(p);
    out["scenario"] = scenario.name();
    out["gpus"] = plan.world_size();
    out["gpu"] = plan.cluster().gpu();
    out["layout"] = LayoutJson(plan);
    out["model_flops_per_step"] = plan.model_flops_per_step();
    nlohmann::json ops = nlohmann::json::array();
    for (const auto& stage : plan.stages()) ops.push_back(stage.ops_size());
    out["ops_per_stage"] = ops;
    std::cout << out.dump(2) << "\n";
    return Status::Ok();
  }
  std::printf("scenario      %s\n", scenario.name().c_str());
  std::printf("cluster       %d x %s\n", plan.world_size(), plan.cluster().gpu().c_str());
  std::printf("layout        %s\n", LayoutLine(plan).c_str());
  std::printf("predicted     step %.3f s, MFU %.1f%%, %.1f TFLOP/s per GPU, %.0f tokens/s\n",
              p.iteration_time_s(), 100 * p.mfu(), p.tflops_per_gpu(), p.tokens_per_s());
  std::printf("breakdown     compute %.3f s, exposed communication %.3f s, bubble %.3f s\n",
              p.compute_s(), p.exposed_comm_s(), p.bubble_s());
  std::printf("memory        %.1f GB per GPU (of %.0f GB)\n", p.memory_per_gpu_gb(), plan.cluster().hbm_gb());
  return Status::Ok();
}

}  // namespace megascale::cli
