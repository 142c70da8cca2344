// Rules and defaults of the run block.
#include "planner/spec/validate_run.h"

#include <cmath>
#include <utility>

#include "planner/spec/validate_util.h"

namespace megascale::validation {

namespace {

// Faults `megascale run` cannot inject: a run on CPUs or GPUs has no simulated network or clock
// to fail, flap or load; only a slow device (faults.stragglers) has a real counterpart.
Status CheckRunFaults(const FaultSpec& f) {
  const std::pair<const char*, int> unsupported[] = {
      {"faults.failures", f.failures_size()},
      {"faults.nic_flaps", f.nic_flaps_size()},
      {"faults.degraded_links", f.degraded_links_size()},
      {"faults.switch_failures", f.switch_failures_size()},
      {"faults.background", f.background_size()},
      {"faults.random_stragglers", f.has_random_stragglers() ? 1 : 0},
  };
  for (const auto& [field, count] : unsupported) {
    if (count > 0) {
      return Status::BadField(field, Num(count) + (count == 1 ? " entry" : " entries"),
                              "a scenario with a run block may inject only faults.stragglers (a slowed "
                              "device in `megascale run`); move the other faults to a scenario without one");
    }
  }
  return Status::Ok();
}

}  // namespace

Status CheckRunnableModel(const ModelSpec& m) {
  ModelSpec resolved = m;
  MS_RETURN_IF_ERROR(ResolveModel(&resolved));
  MS_CHECK_FIELD(!resolved.has_mla(), "model.mla", std::string("set"),
                 "the executor's attention is multi-head: MLA models are planned only (docs/moe.md)");
  MS_CHECK_FIELD(!resolved.has_moe(), "model.moe", resolved.has_moe() ? Num(resolved.moe().num_experts()) + " experts" : "",
                 "the executor runs dense models: MoE models are planned only (docs/moe.md)");
  // The executor's GPT is GPT-2's MLP (GeLU), without dropout (model.dropout is memory only).
  MS_CHECK_FIELD(!resolved.gated_mlp(), "model.gated_mlp", std::string("true"),
                 "the executor runs a GeLU MLP: gated MLPs are planned and simulated only");
  MS_CHECK_FIELD(resolved.head_dim() == 0 || resolved.head_dim() * resolved.heads() == resolved.hidden(),
                 "model.head_dim", resolved.head_dim(),
                 "the executor's attention is hidden wide: 0 or model.hidden / model.heads (" +
                     Num(resolved.hidden() / resolved.heads()) + ") to run; others are planned and simulated only");
  return Status::Ok();
}

Status CheckRunnable(const ModelSpec& m, const LayoutSpec& l, const TrainingSpec& t) {
  MS_RETURN_IF_ERROR(CheckRunnableModel(m));
  MS_CHECK_FIELD(m.ffn_hidden() % l.tp() == 0, "layout.tp", l.tp(),
                 "must divide model.ffn_hidden (" + Num(m.ffn_hidden()) + ") to run: each TP rank holds ffn / tp "
                 "of the MLP's columns");
  const int64_t rows = static_cast<int64_t>(t.micro_batch()) * m.seq_len();
  if (l.sequence_parallel() && l.tp() > 1 && rows % l.tp() != 0) {
    return Status::BadField("layout.sequence_parallel", "true",
                            "needs training.micro_batch x model.seq_len (" + Num(rows) +
                                ") to be a multiple of layout.tp (" + Num(l.tp()) + ") to run");
  }
  return Status::Ok();
}

Status ResolveRun(const Scenario& s, RunSpec* r) {
  const FaultSpec& faults = s.faults();
  const ReliabilitySpec& reliability = s.reliability();
  const LayoutSpec& layout = s.layout();
  MS_RETURN_IF_ERROR(CheckRunnable(s.model(), layout, s.training()));
  MS_RETURN_IF_ERROR(CheckRunFaults(faults));
  if (r->device() != "cpu" && r->device() != "cuda") {
    return Status::BadField("run.device", "\"" + r->device() + "\"", "must be \"cpu\" or \"cuda\"");
  }
  MS_CHECK_FIELD(r->lr() > 0 && std::isfinite(r->lr()), "run.lr", r->lr(), "must be > 0 and finite");
  MS_CHECK_FIELD(r->beta1() >= 0 && r->beta1() < 1, "run.beta1", r->beta1(), "must be in [0, 1)");
  MS_CHECK_FIELD(r->beta2() >= 0 && r->beta2() < 1, "run.beta2", r->beta2(), "must be in [0, 1)");
  MS_CHECK_FIELD(r->eps() > 0 && std::isfinite(r->eps()), "run.eps", r->eps(), "must be > 0 and finite");
  MS_CHECK_FIELD(r->weight_decay() >= 0 && std::isfinite(r->weight_decay()), "run.weight_decay",
                 r->weight_decay(), "must be >= 0 and finite");
  MS_CHECK_FIELD(r->clip_norm() >= 0 && std::isfinite(r->clip_norm()), "run.clip_norm", r->clip_norm(),
                 "must be >= 0 and finite (0 = no clipping)");
  RunCheckpointSpec* ck = r->mutable_checkpoint();
  MS_CHECK_RANGE(ck->keep(), 1, 1000, "run.checkpoint.keep", "complete checkpoints kept");
  if (!ck->dir().empty() && reliability.checkpoint().interval_steps() <= 0) {
    return Status::BadField("reliability.checkpoint.interval_steps", Num(reliability.checkpoint().interval_steps()),
                            "must be > 0 when run.checkpoint.dir is set: the run checkpoints every that many steps "
                            "(0 asks `megascale ettr` to search for an interval)");
  }
  ck->set_dir(ck->dir());
  ck->set_keep(ck->keep());
  const int world = layout.tp() * layout.pp() * layout.dp();
  for (int i = 0; i < r->faults_size(); ++i) {
    RunFault* f = r->mutable_faults(i);
    const std::string at = "run.faults[" + Num(i) + "]";
    MS_CHECK_RANGE(f->rank(), 0, world - 1, at + ".rank", "a world rank of tp x pp x dp");
    MS_CHECK_RANGE(f->step(), 0, 100000000, at + ".step", "a step");
    MS_CHECK_RANGE(f->attempt(), 0, 1000, at + ".attempt", "a launch attempt");
    const bool on_checkpoint = f->kind() == RunFault::CHECKPOINT_WRITE_FAILS || f->kind() == RunFault::CHECKPOINT_TORN;
    const int interval = reliability.checkpoint().interval_steps();
    if (on_checkpoint && (ck->dir().empty() || interval <= 0 || f->step() == 0 || f->step() % interval != 0)) {
      return Status::BadField(at + ".step", Num(f->step()),
                              "a checkpoint fault needs run.checkpoint.dir and a step the run checkpoints after "
                              "(a positive multiple of reliability.checkpoint.interval_steps)");
    }
    f->set_kind(f->kind());
    f->set_rank(f->rank());
    f->set_step(f->step());
    f->set_attempt(f->attempt());
  }
  // Every default written out (the corpus stays "" = the shipped one, resolved where the run starts).
  r->set_corpus(r->corpus());
  r->set_device(r->device());
  r->set_lr(r->lr());
  r->set_beta1(r->beta1());
  r->set_beta2(r->beta2());
  r->set_eps(r->eps());
  r->set_weight_decay(r->weight_decay());
  r->set_clip_norm(r->clip_norm());
  r->set_param_seed(r->param_seed());
  r->set_data_seed(r->data_seed());
  r->set_prefetch(r->prefetch());
  r->set_one_reader_per_node(r->one_reader_per_node());
  return Status::Ok();
}

}  // namespace megascale::validation
