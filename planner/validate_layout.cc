// Rules and defaults of the layout and training blocks.
#include "planner/validate_util.h"

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

// Micro-batches per replica and layer passes per stage (micro-batches x layers on the stage) a plan
// may hold: a stage's program has ops for each pass.
constexpr int64_t kMaxMicrobatches = 16384;
constexpr int64_t kMaxLayerPasses = 65536;
// The derived quantity their errors name, and how it is computed.
constexpr const char* kMicrobatchesField = "micro-batches per replica";
constexpr const char* kMicrobatchesFormula = "training.global_batch / (training.micro_batch x layout.dp) = ";

Status ResolveTraining(const ModelSpec& m, const LayoutSpec& l, TrainingSpec* t) {
  const int64_t layers = m.layers();
  MS_CHECK_RANGE(t->global_batch(), int64_t{1}, kMaxGlobalBatch, "training.global_batch", "sequences");
  MS_CHECK_RANGE(t->micro_batch(), 1, kMaxMicroBatch, "training.micro_batch", "sequences");
  MS_CHECK_FIELD(t->steps() >= 1 && t->steps() <= 1000000, "training.steps", t->steps(),
                 "must be between 1 and 1000000");
  const int64_t per_round = static_cast<int64_t>(t->micro_batch()) * l.dp();
  if (t->global_batch() % per_round != 0) {
    return Status::BadField("training.global_batch", Num(t->global_batch()),
                            "must be a multiple of training.micro_batch x layout.dp (" +
                                Num(per_round) + ")");
  }
  const int64_t microbatches = t->global_batch() / per_round;
  // Every stage's program holds each micro-batch's pass through each of its layers: bounded so
  // that a plan stays within a few hundred MB (65,536 layer-passes: ~430 MB, measured).
  const int64_t passes = microbatches * (layers / l.pp());
  if (microbatches > kMaxMicrobatches || passes > kMaxLayerPasses) {
    return Status::BadField(
        kMicrobatchesField,
        kMicrobatchesFormula + Num(microbatches) + ", x " + Num(layers / l.pp()) + " layers per stage = " +
            Num(passes),
        "must be at most " + Num(kMaxMicrobatches) + " micro-batches and " + Num(kMaxLayerPasses) +
            " layer passes per stage (a larger micro_batch or dp, or more stages)");
  }
  if (l.virtual_stages() > 1 && microbatches % l.pp() != 0) {
    return Status::BadField(kMicrobatchesField, kMicrobatchesFormula + Num(microbatches),
                            "the interleaved schedule needs a multiple of layout.pp (" + Num(l.pp()) + ")");
  }
  t->set_global_batch(t->global_batch());
  t->set_micro_batch(t->micro_batch());
  t->set_optimizer(t->optimizer());
  t->set_steps(t->steps());
  t->set_data_pipeline_overlap(t->data_pipeline_overlap());
  return Status::Ok();
}

}  // namespace megascale::validation
