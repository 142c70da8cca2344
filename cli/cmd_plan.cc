#include <cstdio>
#include <iostream>

#include "cli/commands.h"
#include "cli/views.h"
#include "planner/program/plan_builder.h"
#include "planner/search/search.h"
#include "planner/search/search_inverse.h"
#include "traces/format/figure_text.h"

namespace megascale::cli {
namespace {

nlohmann::json RankedJson(const RankedLayout& r, int64_t global_batch) {
  nlohmann::json j = PredictionJson(r.prediction);
  j["layout"] = LayoutJson(r.candidate.layout, r.candidate.micro_batch, global_batch, r.microbatches);
  j["estimated_iteration_time_s"] = r.estimate.iteration_time_s;
  return j;
}

nlohmann::json SearchJson(const Scenario& s, const SearchResult& r) {
  nlohmann::json rejected = nlohmann::json::object();
  for (const auto& [rule, n] : r.rejected.rules()) rejected[rule] = n;
  nlohmann::json layouts = nlohmann::json::array();
  for (const RankedLayout& b : r.best) layouts.push_back(RankedJson(b, r.global_batch));
  return {{"scenario", s.name()},
          {"gpus", r.num_gpus},
          {"gpu", s.cluster().gpu()},
          {"search",
           {{"candidates", r.candidates},
            {"estimated", r.estimated},
            {"rejected", rejected},
            {"estimate_s", r.estimate_s},
            {"rerank_s", r.rerank_s},
            {"total_s", r.total_s()}}},
          {"layouts", layouts}};
}

void PrintRanked(const SearchResult& r) {
  std::printf("%-4s %-70s %9s %6s %8s %8s %8s\n", "rank", "layout", "step (s)", "MFU", "memory",
              "bubble", "exposed");
  int rank = 1;
  for (const RankedLayout& b : r.best) {
    const Prediction& p = b.prediction;
    std::printf("%-4d %-70s %9.3f %5.1f%% %5.1f GB %7.3fs %7.3fs\n", rank++,
                CandidateLine(b.candidate).c_str(), p.iteration_time_s(), 100 * p.mfu(),
                p.memory_per_gpu_gb(), p.bubble_s(), p.exposed_comm_s());
  }
}

void PrintBench(const SearchResult& r) {
  std::fprintf(stderr,
               "bench: %s candidates (%s passed the rules and fit in memory) estimated in %.3f s: "
               "%.0f configs/s; best %zu re-evaluated by the full planner in %.3f s; total %.3f s\n",
               Thousands(r.candidates).c_str(), Thousands(r.estimated).c_str(), r.estimate_s,
               r.estimate_s > 0 ? r.candidates / r.estimate_s : 0.0, r.best.size(), r.rerank_s,
               r.total_s());
}

Status RunSearch(const Scenario& scenario, const PlanArgs& args) {
  MS_ASSIGN_OR_RETURN(SearchResult r, SearchLayouts(scenario));
  if (args.bench) PrintBench(r);
  if (args.json) {
    std::cout << SearchJson(scenario, r).dump(2) << "\n";
    return Status::Ok();
  }
  std::printf("scenario      %s\n", scenario.name().c_str());
  std::printf("cluster       %s x %s, global batch %s\n", Thousands(r.num_gpus).c_str(),
              scenario.cluster().gpu().c_str(), Thousands(r.global_batch).c_str());
  std::printf("search        %s candidates, %s fit; rejected: %s\n", Thousands(r.candidates).c_str(),
              Thousands(r.estimated).c_str(), r.rejected.Describe().c_str());
  std::printf("              %.2f s (estimates %.2f s, full planner on the best %.2f s)\n\n", r.total_s(),
              r.estimate_s, r.rerank_s);
  PrintRanked(r);
  return Status::Ok();
}

Status RunInverse(const Scenario& scenario, const PlanArgs& args) {
  MS_ASSIGN_OR_RETURN(InverseAnswer a, SmallestCluster(scenario));
  if (args.bench) PrintBench(a.search);
  const RankedLayout& best = a.search.best.front();
  if (args.json) {
    nlohmann::json out = SearchJson(scenario, a.search);
    out["inverse"] = {{"token_budget", a.token_budget},
                      {"deadline_days", a.deadline_days},
                      {"gpu_budget", a.gpu_budget},
                      {"gpus", a.search.num_gpus},
                      {"days", a.days},
                      {"gpu_counts_examined", a.counts_examined}};
    std::cout << out.dump(2) << "\n";
    return Status::Ok();
  }
  std::printf("scenario      %s\n", scenario.name().c_str());
  char deadline[64] = "";
  if (a.deadline_days > 0) std::snprintf(deadline, sizeof(deadline), " within %.1f days", a.deadline_days);
  std::printf("question      %.3g tokens%s on at most %s %s GPUs (global batch %s)\n", a.token_budget,
              deadline, Thousands(a.gpu_budget).c_str(), scenario.cluster().gpu().c_str(),
              Thousands(a.search.global_batch).c_str());
  std::printf("answer        %s GPUs: %s\n", Thousands(a.search.num_gpus).c_str(),
              CandidateLine(best.candidate).c_str());
  std::printf("predicted     %.1f days; step %.3f s, MFU %.1f%%, %.1f GB per GPU\n", a.days,
              best.prediction.iteration_time_s(), 100 * best.prediction.mfu(),
              best.prediction.memory_per_gpu_gb());
  std::printf("examined      %d GPU counts\n\n", a.counts_examined);
  PrintRanked(a.search);
  return Status::Ok();
}

}  // namespace

Status RunPlan(const PlanArgs& args) {
  MS_ASSIGN_OR_RETURN(Scenario scenario, LoadResolvedScenario(args.scenario, args.calibration));
  if (scenario.search().enabled()) {
    if (scenario.search().token_budget() > 0) return RunInverse(scenario, args);
    return RunSearch(scenario, args);
  }
  MS_ASSIGN_OR_RETURN(Plan plan, BuildPlan(scenario));
  const Prediction& p = plan.prediction();
  if (args.json) {
    nlohmann::json out = PredictionJson(p);
    out["scenario"] = scenario.name();
    out["gpus"] = plan.world_size();
    out["gpu"] = plan.cluster().gpu();
    out["layout"] = LayoutJson(plan);
    out["model_flops_per_step"] = plan.model_flops_per_step();
    // The resolved model and the GPU's peak, so that an outside trainer (bench/pytorch_gpt.py)
    // builds the same model and reports MFU from these figures rather than its own formula.
    const ModelSpec& m = plan.model();
    out["model"] = {{"layers", m.layers()},         {"hidden", m.hidden()},
                    {"heads", m.heads()},           {"kv_heads", m.kv_heads()},
                    {"ffn_hidden", m.ffn_hidden()}, {"seq_len", m.seq_len()},
                    {"vocab", m.vocab()},           {"parallel_block", m.parallel_block()},
                    {"sliding_window", m.sliding_window()}, {"gated_mlp", m.gated_mlp()},
                    {"tied_embeddings", m.tied_embeddings()}};
    out["peak_tflops"] = plan.cluster().peak_tflops();
    nlohmann::json ops = nlohmann::json::array();
    for (const auto& stage : plan.stages()) ops.push_back(stage.ops_size());
    out["ops_per_stage"] = ops;
    out["dp_collectives"] = DpCollectivesJson(plan);
    if (plan.model().has_moe()) out["moe"] = MoeJson(plan);
    std::cout << out.dump(2) << "\n";
    return Status::Ok();
  }
  std::printf("scenario      %s\n", scenario.name().c_str());
  std::printf("cluster       %s\n", ClusterLine(plan).c_str());
  std::printf("layout        %s\n", LayoutLine(plan).c_str());
  std::printf("predicted     step %.3f s, MFU %s%%, %s TFLOP/s per GPU, %.0f tokens/s\n",
              p.iteration_time_s(), FigureText(100 * p.mfu()).c_str(), FigureText(p.tflops_per_gpu()).c_str(),
              p.tokens_per_s());
  std::printf("breakdown     compute %.3f s, exposed communication %.3f s, bubble %.3f s\n",
              p.compute_s(), p.exposed_comm_s(), p.bubble_s());
  std::printf("%s", HostBoundLine(plan).c_str());
  std::printf("%s", DpCollectivesLine(plan).c_str());
  std::printf("%s", MoeLine(plan).c_str());
  std::printf("memory        %.1f GB per GPU at the peak (limit %s: %.0f GB x %.2f; docs/memory.md)\n",
              p.memory_per_gpu_gb(), GbText(MemoryLimitBytes(scenario)).c_str(), plan.cluster().hbm_gb(),
              scenario.search().memory_fraction());
  return Status::Ok();
}

}  // namespace megascale::cli
