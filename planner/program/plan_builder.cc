#include "planner/program/plan_builder.h"

#include <algorithm>
#include <string>

#include "planner/cost/cost_model.h"
#include "planner/cost/memory.h"
#include "planner/cost/metrics.h"
#include "planner/program/plan_with_constants.h"
#include "planner/program/predictor.h"
#include "planner/program/stage_program.h"
#include "planner/spec/layout.h"
#include "topology/cluster.h"

namespace megascale {
namespace {

std::string Str(int64_t v) { return std::to_string(v); }

// The rules the builder itself relies on (ResolveScenario checks them too; a hand-made scenario
// that breaks one gets a message rather than a wrong plan).
Status CheckSchedulable(const Scenario& s) {
  const ModelSpec& m = s.model();
  const LayoutSpec& l = s.layout();
  const int vp = l.virtual_stages();
  if (l.tp() < 1 || l.pp() < 1 || l.dp() < 1 || vp < 1) {
    return Status::BadField("layout", "tp " + Str(l.tp()) + ", pp " + Str(l.pp()) + ", dp " +
                                          Str(l.dp()) + ", virtual_stages " + Str(vp),
                            "every size must be >= 1");
  }
  if (m.layers() % (l.pp() * vp) != 0) {
    return Status::BadField("model.layers", Str(m.layers()),
                            "must be a multiple of layout.pp x layout.virtual_stages (" +
                                Str(l.pp() * vp) + ")");
  }
  if (vp > 1 && l.schedule() != INTERLEAVED_1F1B) {
    return Status::BadField("layout.virtual_stages", Str(vp), "> 1 needs INTERLEAVED_1F1B");
  }
  const int64_t per_step = static_cast<int64_t>(s.training().micro_batch()) * l.dp();
  if (per_step <= 0 || s.training().global_batch() % per_step != 0) {
    return Status::BadField("training.global_batch", Str(s.training().global_batch()),
                            "must be a multiple of micro_batch x dp (" + Str(per_step) + ")");
  }
  const int64_t microbatches = s.training().global_batch() / per_step;
  if (vp > 1 && microbatches % l.pp() != 0) {
    return Status::BadField("training.global_batch", Str(s.training().global_batch()),
                            "interleaved 1F1B needs micro-batches per replica (" +
                                Str(microbatches) + ") a multiple of layout.pp (" + Str(l.pp()) +
                                ")");
  }
  if (m.has_moe()) {
    const int64_t experts_group = static_cast<int64_t>(l.ep()) * l.etp();
    if (l.ep() < 1 || l.etp() < 1 || (static_cast<int64_t>(l.tp()) * l.dp()) % experts_group != 0) {
      return Status::BadField("layout.ep x layout.etp", Str(l.ep()) + " x " + Str(l.etp()),
                              "must divide layout.tp x layout.dp (" + Str(l.tp() * l.dp()) +
                                  "): the expert groups fold over a stage's ranks");
    }
  }
  if (l.tp() * l.pp() * l.dp() > s.cluster().num_gpus()) {
    return Status::BadField("layout", "tp x pp x dp = " + Str(l.tp() * l.pp() * l.dp()),
                            "exceeds cluster.num_gpus (" + Str(s.cluster().num_gpus()) + ")");
  }
  return Status::Ok();
}

// Where stage `stage`'s first EP group sits. A stage's tp x dp ranks, numbered TP-fastest, are
// regrouped ETP-fastest then EP (Megatron-Core's folding): the group's members are every etp-th.
EpPlacement EpPlacementOf(const topology::Cluster& cluster, const RankLayout& ranks, int stage,
                          const ModelSpec& model, const LayoutSpec& layout, int gpus_per_node) {
  EpPlacement p;
  p.members = layout.ep();
  p.members_on_node = 0;
  auto gpu_of = [&](int local) { return ranks.RankOf({local % layout.tp(), local / layout.tp(), stage}); };
  const int me = gpu_of(0);
  for (int j = 0; j < layout.ep(); ++j) {
    const int peer = gpu_of(j * layout.etp());
    if (peer / gpus_per_node == me / gpus_per_node) {
      ++p.members_on_node;
    } else if (p.network.bandwidth_bytes_per_s <= 0) {
      p.network = RouteFigures(cluster, me, peer);
    }
  }
  SetEpShares(model.moe(), layout.moe_dispatcher(), &p);
  return p;
}

// Network estimates for one stage, between representatives (tp 0, dp 0); rank r runs on GPU r.
void FillLinks(const topology::Cluster& cluster, const RankLayout& ranks, int stage,
               const LayoutSpec& layout, StageInputs& in) {
  const int me = ranks.RankOf({0, 0, stage});
  const double bytes = PpActivationBytes(in.layer.shape);
  in.pp_send_s.assign(layout.pp(), 0);
  in.pp_recv_s.assign(layout.pp(), 0);
  for (int peer = 0; peer < layout.pp(); ++peer) {
    if (peer == stage) continue;
    const int other = ranks.RankOf({0, 0, peer});
    in.pp_send_s[peer] = in.layer.cost->PpTime(bytes, RouteFigures(cluster, me, other));
    in.pp_recv_s[peer] = in.layer.cost->PpTime(bytes, RouteFigures(cluster, other, me));
  }
  if (layout.dp() > 1) {
    in.dp_link = DpHopFigures(cluster, ranks, stage, layout.dp());
    in.dp_nodes = DpNodeFigures(cluster, ranks, stage, layout.dp());
  }
  if (layout.pp() > 1 && (stage == 0 || stage == layout.pp() - 1)) {
    in.tied_link = RouteFigures(cluster, ranks.RankOf({0, 0, 0}), ranks.RankOf({0, 0, layout.pp() - 1}));
  }
}

}  // namespace

Result<Plan> BuildPlan(const Scenario& resolved) {
  return BuildPlanWith(resolved, CalibrationOf(resolved.cluster()));
}

Result<Plan> BuildPlanWith(const Scenario& resolved, const CostConstants& constants) {
  MS_RETURN_IF_ERROR(CheckSchedulable(resolved));
  const ModelSpec& model = resolved.model();
  const LayoutSpec& layout = resolved.layout();
  const TrainingSpec& training = resolved.training();
  MS_ASSIGN_OR_RETURN(topology::Cluster cluster, topology::Cluster::Build(resolved.cluster()));

  Plan plan;
  plan.set_scenario_name(resolved.name());
  *plan.mutable_model() = model;
  *plan.mutable_layout() = layout;
  *plan.mutable_training() = training;
  *plan.mutable_cluster() = resolved.cluster();
  plan.set_world_size(layout.tp() * layout.pp() * layout.dp());
  const int64_t microbatches =
      training.global_batch() / (static_cast<int64_t>(training.micro_batch()) * layout.dp());
  plan.set_microbatches(static_cast<int>(microbatches));
  // The layout must fit before it is priced: the rule search applies to every candidate.
  const double memory = MostStageMemoryBytes(model, layout, training.micro_batch(), plan.microbatches());
  MS_RETURN_IF_ERROR(CheckMemoryFits(resolved, memory));
  plan.set_model_flops_per_step(ModelFlopsPerStep(model, training.global_batch()));
  plan.set_hardware_flops_per_step(
      HardwareFlopsPerStep(model, training.global_batch(), layout.recompute()));
  plan.set_tokens_per_step(training.global_batch() * model.seq_len());

  const CostModel cost(resolved.cluster(), constants);
  StageInputs in;
  in.layer.shape = OpShapeOf(model, layout, training.micro_batch());
  in.layer.cost = &cost;
  in.layer.recompute = layout.recompute();
  in.layer.overlap_tp = layout.overlap().tp();
  in.layer.overlap_ep = layout.overlap().ep();
  in.layers = model.layers();
  in.pp = layout.pp();
  in.vp = layout.virtual_stages();
  in.dp = layout.dp();
  in.microbatches = plan.microbatches();
  in.zero_stage = layout.zero_stage();
  in.overlap_pp = layout.overlap().pp();
  in.overlap_dp = layout.overlap().dp();
  in.data_pipeline_overlap = training.data_pipeline_overlap();
  const RankLayout ranks(layout);
  for (int stage = 0; stage < layout.pp(); ++stage) {
    FillLinks(cluster, ranks, stage, layout, in);
    if (model.has_moe()) {
      in.layer.ep = EpPlacementOf(cluster, ranks, stage, model, layout, resolved.cluster().gpus_per_node());
    }
    *plan.add_stages() = BuildStageProgram(stage, in);
  }
  MS_ASSIGN_OR_RETURN(*plan.mutable_prediction(), PredictPlan(plan));
  plan.mutable_prediction()->set_memory_per_gpu_gb(memory / 1e9);
  return plan;
}

}  // namespace megascale
