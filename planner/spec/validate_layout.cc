// Rules and defaults of the layout block (planner/model.proto LayoutSpec): a TP x PP x DP that
// fills the cluster and divides the model, and the schedule, ZeRO and kernel settings.
#include "planner/spec/moe_layers.h"
#include "planner/spec/validate_util.h"

namespace megascale::validation {
Status DefaultDataParallel(const ClusterSpec& c, LayoutSpec* l) {
  // Sizes out of range are ResolveLayout's to report.
  if (l->has_dp() || l->tp() < 1 || l->pp() < 1 || c.num_gpus() < 1) return Status::Ok();
  const int64_t tp_pp = static_cast<int64_t>(l->tp()) * l->pp();
  if (c.num_gpus() % tp_pp != 0) {
    return Status::BadField("layout.tp x layout.pp", Num(l->tp()) + " x " + Num(l->pp()) + " = " + Num(tp_pp),
                            "must divide cluster.num_gpus (" + Num(c.num_gpus()) +
                                "): layout.dp, left out, is num_gpus / (tp x pp)");
  }
  l->set_dp(static_cast<int>(c.num_gpus() / tp_pp));
  return Status::Ok();
}

namespace {

// layout.ep and layout.etp: 1 for a dense model; for an MoE one, expert groups that fold over a
// pipeline stage's tp x dp ranks (Megatron-Core's parallel folding).
Status ResolveExpertLayout(const ClusterSpec& c, const ModelSpec& m, LayoutSpec* l) {
  if (!m.has_moe()) {
    MS_CHECK_FIELD(!l->overlap().ep(), "layout.overlap.ep", std::string("true"),
                   "must be false for a dense model (it overlaps the MoE all-to-alls)");
    MS_CHECK_FIELD(l->ep() == 1, "layout.ep", l->ep(), "must be 1 for a dense model (expert parallelism needs model.moe)");
    MS_CHECK_FIELD(l->etp() == 1, "layout.etp", l->etp(), "must be 1 for a dense model (expert TP needs model.moe)");
    return Status::Ok();
  }
  const MoeSpec& e = m.moe();
  MS_CHECK_RANGE(l->ep(), 1, e.num_experts(), "layout.ep", "at most model.moe.num_experts");
  MS_CHECK_FIELD(e.num_experts() % l->ep() == 0, "layout.ep", l->ep(),
                 "must divide model.moe.num_experts (" + Num(e.num_experts()) + "): each EP rank holds as many experts");
  MS_CHECK_RANGE(l->etp(), 1, c.gpus_per_node(), "layout.etp", "at most cluster.gpus_per_node");
  MS_CHECK_FIELD(RoutedFfn(m) % l->etp() == 0, "layout.etp", l->etp(),
                 "must divide the expert FFN size (" + Num(RoutedFfn(m)) + ")");
  const int64_t group = static_cast<int64_t>(l->ep()) * l->etp();
  const int64_t stage_ranks = static_cast<int64_t>(l->tp()) * l->dp();
  if (stage_ranks % group != 0) {
    return Status::BadField("layout.ep x layout.etp", Num(l->ep()) + " x " + Num(l->etp()) + " = " + Num(group),
                            "must divide layout.tp x layout.dp (" + Num(stage_ranks) +
                                "): the EP groups fold over a pipeline stage's ranks, expert-DP = tp x dp / (ep x etp)");
  }
  MS_CHECK_FIELD(l->tp() == 1 || l->sequence_parallel(), "layout.sequence_parallel", std::string("false"),
                 "an MoE model with layout.tp > 1 needs sequence parallelism (the router and the experts run "
                 "on each rank's sequence shard, as Megatron-Core requires)");
  l->set_ep(l->ep());
  l->set_etp(l->etp());
  l->set_moe_dispatcher(l->moe_dispatcher());
  l->mutable_overlap()->set_ep(l->overlap().ep());
  return Status::Ok();
}

}  // namespace

Status ResolveLayout(const ClusterSpec& c, const ModelSpec& m, LayoutSpec* l) {
  MS_CHECK_RANGE(l->tp(), 1, c.num_gpus(), "layout.tp", "at most cluster.num_gpus");
  MS_CHECK_RANGE(l->pp(), 1, c.num_gpus(), "layout.pp", "at most cluster.num_gpus");
  MS_CHECK_RANGE(l->dp(), 1, c.num_gpus(), "layout.dp", "at most cluster.num_gpus");
  const int64_t product = static_cast<int64_t>(l->tp()) * l->pp() * l->dp();
  if (product != c.num_gpus()) {
    return Status::BadField("layout.tp x layout.pp x layout.dp",
                            Num(l->tp()) + " x " + Num(l->pp()) + " x " + Num(l->dp()) + " = " + Num(product),
                            "must equal cluster.num_gpus (" + Num(c.num_gpus()) + ")");
  }
  MS_CHECK_FIELD(m.heads() % l->tp() == 0, "layout.tp", l->tp(),
                 "must divide model.heads (" + Num(m.heads()) + ")");
  MS_CHECK_FIELD(m.kv_heads() % l->tp() == 0, "layout.tp", l->tp(),
                 "must divide model.kv_heads (" + Num(m.kv_heads()) + ")");
  MS_CHECK_FIELD(l->tp() <= c.gpus_per_node() && c.gpus_per_node() % l->tp() == 0, "layout.tp",
                 l->tp(),
                 "must divide cluster.gpus_per_node (" + Num(c.gpus_per_node()) +
                     "): tensor parallelism stays inside one NVSwitch node");
  MS_CHECK_RANGE(l->virtual_stages(), 1, m.layers(), "layout.virtual_stages", "at most model.layers");
  if (l->virtual_stages() > 1 && l->schedule() != INTERLEAVED_1F1B) {
    return Status::BadField("layout.virtual_stages", Num(l->virtual_stages()),
                            "values > 1 need layout.schedule: INTERLEAVED_1F1B");
  }
  const int64_t chunks = static_cast<int64_t>(l->pp()) * l->virtual_stages();
  if (m.layers() % chunks != 0) {
    return Status::BadField("layout.pp x layout.virtual_stages", Num(chunks),
                            "must divide model.layers (" + Num(m.layers()) +
                                ") so every model chunk has the same layers");
  }
  MS_CHECK_FIELD(l->zero_stage() >= 0 && l->zero_stage() <= 3, "layout.zero_stage", l->zero_stage(),
                 "must be 0, 1, 2 or 3");
  MS_RETURN_IF_ERROR(ResolveExpertLayout(c, m, l));
  // Write defaults explicitly so a resolved scenario prints completely.
  l->set_tp(l->tp());
  l->set_pp(l->pp());
  l->set_dp(l->dp());
  l->set_virtual_stages(l->virtual_stages());
  l->set_sequence_parallel(l->sequence_parallel());
  l->set_zero_stage(l->zero_stage());
  l->set_schedule(l->schedule());
  l->set_recompute(l->recompute());
  l->set_rank_order(l->rank_order());
  l->set_fp32_grads(l->fp32_grads());
  OverlapSpec* o = l->mutable_overlap();
  o->set_dp(o->dp());
  o->set_pp(o->pp());
  o->set_tp(o->tp());
  KernelSpec* k = l->mutable_kernels();
  k->set_flash_attention(k->flash_attention());
  k->set_fused_elementwise(k->fused_elementwise());
  MS_CHECK_RANGE(k->launch_us(), 0.0, 10000.0, "layout.kernels.launch_us", "microseconds");
  k->set_launch_us(k->launch_us());
  MS_CHECK_RANGE(k->micro_batch_host_us(), 0.0, 100000.0, "layout.kernels.micro_batch_host_us", "microseconds");
  k->set_micro_batch_host_us(k->micro_batch_host_us());
  MS_CHECK_RANGE(k->softmax_batch_multiple(), 1, 64, "layout.kernels.softmax_batch_multiple", "score batches");
  k->set_softmax_batch_multiple(k->softmax_batch_multiple());
  return Status::Ok();
}

}  // namespace megascale::validation
