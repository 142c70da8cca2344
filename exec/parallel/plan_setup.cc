#include "exec/parallel/plan_setup.h"

namespace megascale {
namespace exec {

StageSetup StageSetupOf(const Plan& plan, const RankCoords& me) {
  const LayoutSpec& l = plan.layout();
  StageSetup setup;
  setup.stage = me.pp;
  setup.pp = l.pp();
  setup.vp = l.virtual_stages();
  setup.tp_rank = me.tp;
  setup.tp = l.tp();
  setup.sequence_parallel = l.sequence_parallel();
  setup.micro_batch = plan.training().micro_batch();
  setup.recompute = l.recompute();
  return setup;
}

OptimizerSetup OptimizerSetupOf(const Plan& plan, const OptimizerHyper& hyper, float clip_norm) {
  OptimizerSetup opt;
  opt.kind = plan.training().optimizer();
  opt.hyper = hyper;
  opt.clip_norm = clip_norm;
  opt.zero_stage = plan.layout().zero_stage();
  opt.sequence_parallel = plan.layout().sequence_parallel();
  return opt;
}

}  // namespace exec
}  // namespace megascale
