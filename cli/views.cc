#include "cli/views.h"

#include <sys/resource.h>

#include <cstdio>
#include <string>
#include <vector>

#include "planner/cost/collective_cost.h"
#include "planner/cost/memory.h"
#include "planner/cost/moe_cost.h"
#include "planner/program/dp_collectives.h"
#include "planner/search/search.h"
#include "planner/search/search_inverse.h"
#include "planner/spec/op_kinds.h"
#include "planner/spec/scenario_io.h"
#include "planner/spec/search_space.h"
#include "planner/spec/validate.h"

namespace megascale::cli {

Result<Scenario> LoadResolvedScenario(const std::string& path, const std::string& calibration) {
  MS_ASSIGN_OR_RETURN(Scenario raw, LoadScenario(path));
  if (!calibration.empty()) {
    raw.mutable_cluster()->set_calibration_file(calibration);
    MS_ASSIGN_OR_RETURN(*raw.mutable_cluster()->mutable_calibration(), LoadCalibration(calibration, "--calibration"));
  }
  return ResolveScenario(raw);
}

std::string ClusterLine(const Plan& plan) {
  const ClusterSpec& c = plan.cluster();
  std::string line = std::to_string(plan.world_size()) + " x " + c.gpu();
  if (!c.calibration_file().empty()) {
    line += " (figures of the measured device '" + c.calibration().device() + "', " + c.calibration_file() + ")";
  }
  return line;
}

Result<Scenario> WithSearchedLayout(const Scenario& resolved, const std::string& command) {
  if (!resolved.search().enabled()) return resolved;
  RankedLayout best;
  int num_gpus = 0;
  int64_t global_batch = 0;
  if (resolved.search().token_budget() > 0) {
    MS_ASSIGN_OR_RETURN(InverseAnswer a, SmallestCluster(resolved));
    best = a.search.best.front();
    num_gpus = a.search.num_gpus;
    global_batch = a.search.global_batch;
  } else {
    MS_ASSIGN_OR_RETURN(SearchResult r, SearchLayouts(resolved));
    best = r.best.front();
    num_gpus = r.num_gpus;
    global_batch = r.global_batch;
  }
  Scenario chosen = WithCandidate(resolved, best.candidate, num_gpus, global_batch);
  chosen.mutable_search()->set_enabled(false);
  const LayoutSpec& l = best.candidate.layout;
  std::fprintf(stderr,
               "megascale: note: search.enabled: %s runs the search's best layout, %s GPUs: TP %d x PP %d x "
               "DP %d, micro-batch %d (megascale plan ranks the layouts)\n",
               command.c_str(), Thousands(num_gpus).c_str(), l.tp(), l.pp(), l.dp(), best.candidate.micro_batch);
  return ResolveScenario(chosen);
}

nlohmann::json LayoutJson(const Plan& plan) {
  return LayoutJson(plan.layout(), plan.training().micro_batch(), plan.training().global_batch(),
                    plan.microbatches());
}

nlohmann::json LayoutJson(const LayoutSpec& l, int micro_batch, int64_t global_batch, int microbatches) {
  return {{"tp", l.tp()},
          {"pp", l.pp()},
          {"dp", l.dp()},
          {"virtual_stages", l.virtual_stages()},
          {"sequence_parallel", l.sequence_parallel()},
          {"zero_stage", l.zero_stage()},
          {"schedule", Schedule_Name(l.schedule())},
          {"recompute", Recompute_Name(l.recompute())},
          {"micro_batch", micro_batch},
          {"global_batch", global_batch},
          {"microbatches_per_replica", microbatches}};
}

nlohmann::json PredictionJson(const Prediction& p) {
  return {{"iteration_time_s", p.iteration_time_s()},
          {"tokens_per_s", p.tokens_per_s()},
          {"mfu", p.mfu()},
          {"hfu", p.hfu()},
          {"tflops_per_gpu", p.tflops_per_gpu()},
          {"breakdown",
           {{"compute_s", p.compute_s()},
            {"exposed_comm_s", p.exposed_comm_s()},
            {"bubble_s", p.bubble_s()},
            {"host_wait_s", p.host_wait_s()}}},
          {"memory_per_gpu_gb", p.memory_per_gpu_gb()}};
}

std::string HostBoundLine(const Plan& plan) {
  // An eager stack at narrow shapes: how much of the compute is the GPU waiting for launches, the
  // part a larger micro-batch, CUDA graphs or fused kernels would win back.
  const Prediction& p = plan.prediction();
  if (p.host_wait_s() <= 0.005 * p.compute_s()) return "";
  char buf[256];
  std::snprintf(buf, sizeof(buf),
                "host-bound    %.3f s of the compute (%.0f%%) waits for the host's kernel launches "
                "(layout.kernels.launch_us %g us; docs/planner.md)\n",
                p.host_wait_s(), 100 * p.host_wait_s() / p.compute_s(), plan.layout().kernels().launch_us());
  return buf;
}

namespace {

// NCCL's own spelling (LL, LL128, Simple), as NCCL_PROTO takes it.
const char* ProtocolName(CollectiveSpec::Protocol p) { return NcclProtocolName(ProtocolOf(p)); }

std::string Megabytes(double bytes) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.1f", bytes / 1e6);
  return buf;
}

}  // namespace

namespace {

struct MoeCost {
  double all_to_all_s = 0, experts_s = 0;  // op time on the stage with the most all-to-all time
};

MoeCost MoeCostOf(const Plan& plan) {
  MoeCost most;
  for (const StageProgram& stage : plan.stages()) {
    MoeCost c;
    for (const Op& op : stage.ops()) {
      const OpKindRow& row = OpKindOf(op.kind());
      if (row.cls == OpClass::kEp) c.all_to_all_s += op.duration_s();
      if (op.kind() == EXPERT_UP_GEMM || op.kind() == EXPERT_ACT || op.kind() == EXPERT_DOWN_GEMM) {
        c.experts_s += op.duration_s();
      }
    }
    if (c.all_to_all_s >= most.all_to_all_s) most = c;
  }
  return most;
}

}  // namespace

std::string MoeLine(const Plan& plan) {
  if (!plan.model().has_moe()) return "";
  const LayoutSpec& l = plan.layout();
  const MoeCost c = MoeCostOf(plan);
  const double step = plan.prediction().iteration_time_s();
  char buf[640];
  std::snprintf(buf, sizeof(buf),
                "moe           EP %d x ETP %d (expert-DP %d), %s dispatcher%s; busiest EP rank %.2fx the mean "
                "load (routing spread %g); all-to-alls %.3f s a step on the busiest stage (%.1f%% of the step), "
                "expert GEMMs %.3f s (%.1f%%)\n",
                l.ep(), l.etp(), ExpertDataParallel(l.tp(), l.dp(), l.ep() * l.etp()),
                l.moe_dispatcher() == NODE_DEDUP ? "node-dedup" : "all-to-all",
                l.overlap().ep() ? ", overlapped with expert compute" : "", BusiestRankLoad(plan.model().moe(), l.ep()),
                RoutingSpread(plan.model().moe()), c.all_to_all_s, step > 0 ? 100 * c.all_to_all_s / step : 0,
                c.experts_s, step > 0 ? 100 * c.experts_s / step : 0);
  return buf;
}

nlohmann::json MoeJson(const Plan& plan) {
  if (!plan.model().has_moe()) return nullptr;
  const LayoutSpec& l = plan.layout();
  const MoeCost c = MoeCostOf(plan);
  const double step = plan.prediction().iteration_time_s();
  return {{"ep", l.ep()},
          {"etp", l.etp()},
          {"expert_dp", ExpertDataParallel(l.tp(), l.dp(), l.ep() * l.etp())},
          {"dispatcher", MoeDispatcher_Name(l.moe_dispatcher())},
          {"overlap_ep", l.overlap().ep()},
          {"busiest_rank_load", BusiestRankLoad(plan.model().moe(), l.ep())},
          {"routing_spread", RoutingSpread(plan.model().moe())},
          {"all_to_all_s", c.all_to_all_s},
          {"all_to_all_share", step > 0 ? c.all_to_all_s / step : 0.0},
          {"expert_gemms_s", c.experts_s}};
}

std::string DpCollectivesLine(const Plan& plan) {
  const std::vector<DpCollectiveGroup> groups = SummarizeDpCollectives(plan);
  if (groups.empty()) return std::string();
  std::string line = "dp comm       per step over DP " + std::to_string(plan.layout().dp()) + ":";
  for (size_t i = 0; i < groups.size(); ++i) {
    const DpCollectiveGroup& g = groups[i];
    const std::string bytes = g.min_bytes == g.max_bytes
                                  ? Megabytes(g.max_bytes)
                                  : Megabytes(g.min_bytes) + "-" + Megabytes(g.max_bytes);
    char buf[256];
    std::snprintf(buf, sizeof(buf), "%s %d %s%s of %s MB (%s, %s) %.3f %s", i == 0 ? "" : ";", g.count,
                  CollectiveName(OpKindOf(g.kind).collective), g.count == 1 ? "" : "s", bytes.c_str(),
                  g.algorithm == CollectiveSpec::TREE ? "tree" : "ring", ProtocolName(g.protocol),
                  g.seconds < 1 ? 1e3 * g.seconds : g.seconds, g.seconds < 1 ? "ms" : "s");
    line += buf;
  }
  return line + "\n";
}

nlohmann::json DpCollectivesJson(const Plan& plan) {
  nlohmann::json out = nlohmann::json::array();
  for (const DpCollectiveGroup& g : SummarizeDpCollectives(plan)) {
    out.push_back({{"kind", OpKind_Name(g.kind)},
                   {"count", g.count},
                   {"min_bytes", g.min_bytes},
                   {"max_bytes", g.max_bytes},
                   {"algorithm", CollectiveSpec::Algorithm_Name(g.algorithm)},
                   {"protocol", ProtocolName(g.protocol)},
                   {"seconds", g.seconds}});
  }
  return out;
}

std::string LayoutLine(const Plan& plan) {
  const LayoutSpec& l = plan.layout();
  char buf[256];
  std::snprintf(buf, sizeof(buf), "TP %d x PP %d%s x DP %d, micro-batch %d, %d micro-batch%s, ZeRO-%d",
                l.tp(), l.pp(),
                l.virtual_stages() > 1 ? (" (" + std::to_string(l.virtual_stages()) + " virtual)").c_str() : "",
                l.dp(), plan.training().micro_batch(), plan.microbatches(), plan.microbatches() == 1 ? "" : "es",
                l.zero_stage());
  return buf;
}

double PeakRssMiB() {
  struct rusage usage {};
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_maxrss / 1024.0;  // Linux reports KiB
}

}  // namespace megascale::cli
