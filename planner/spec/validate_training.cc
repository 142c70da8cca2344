// Rules and defaults of the training block (planner/model.proto TrainingSpec): a global batch
// the micro-batches and DP replicas divide, and a plan small enough to hold.
#include "planner/spec/validate_util.h"

namespace megascale::validation {

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
