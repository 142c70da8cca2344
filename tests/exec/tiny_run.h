// Shared by the single-process tests (tests/exec) and the MPI driver (tests/exec_mpi): a tiny GPT
// scenario planned by the real planner, and the single-process reference run (exec/model/gpt.h on the
// whole global batch) that every parallel run must reproduce.
#pragma once

#include <algorithm>
#include <string>
#include <vector>

#include "exec/data/batch_sampler.h"
#include "exec/data/corpus.h"
#include "exec/model/gpt.h"
#include "exec/optim/adamw.h"
#include "exec/optim/grad_clip.h"
#include "exec/optim/lamb.h"
#include "exec/train/run_training.h"
#include "planner/program/plan_builder.h"
#include "planner/spec/validate.h"

namespace megascale::exec::testing {

struct TinySpec {
  int tp = 1, pp = 1, dp = 1, vp = 1;
  int layers = 4, hidden = 32, heads = 4, kv_heads = 2, seq_len = 16, vocab = kByteVocab;
  int micro_batch = 1, global_batch = 8;
  bool parallel_block = false;
  int window = 0;
  Optimizer optimizer = ADAM;
  bool sequence_parallel = true;
  int zero_stage = 1;
  Recompute recompute = RECOMPUTE_NONE;
  bool overlap_pp = true;
  bool overlap_dp = true;
  int steps = 5;
};

inline Scenario TinyScenario(const TinySpec& t) {
  Scenario s;
  s.set_name("tiny-exec");
  ModelSpec* m = s.mutable_model();
  m->set_layers(t.layers);
  m->set_hidden(t.hidden);
  m->set_heads(t.heads);
  m->set_kv_heads(t.kv_heads);
  m->set_seq_len(t.seq_len);
  m->set_vocab(t.vocab);
  m->set_parallel_block(t.parallel_block);
  m->set_sliding_window(t.window);
  LayoutSpec* l = s.mutable_layout();
  l->set_tp(t.tp);
  l->set_pp(t.pp);
  l->set_dp(t.dp);
  l->set_virtual_stages(t.vp);
  l->set_schedule(t.vp > 1 ? INTERLEAVED_1F1B : ONE_F_ONE_B);
  l->set_sequence_parallel(t.sequence_parallel);
  l->set_zero_stage(t.zero_stage);
  l->set_recompute(t.recompute);
  l->mutable_overlap()->set_pp(t.overlap_pp);
  l->mutable_overlap()->set_dp(t.overlap_dp);
  const int gpus = t.tp * t.pp * t.dp;
  s.mutable_cluster()->set_gpu("A100");
  s.mutable_cluster()->set_num_gpus(gpus);
  s.mutable_cluster()->set_gpus_per_node(std::min(gpus, 8));
  s.mutable_cluster()->set_fabric(NONBLOCKING);
  s.mutable_training()->set_global_batch(t.global_batch);
  s.mutable_training()->set_micro_batch(t.micro_batch);
  s.mutable_training()->set_optimizer(t.optimizer);
  s.mutable_training()->set_steps(t.steps);
  return s;
}

inline Result<Plan> TinyPlan(const TinySpec& t) {
  MS_ASSIGN_OR_RETURN(Scenario resolved, ResolveScenario(TinyScenario(t)));
  return BuildPlan(resolved);
}

inline std::string ShippedCorpus() { return std::string(MEGASCALE_SOURCE_DIR) + "/" + kShippedCorpus; }

// The hyper-parameters the comparisons use: LAMB's papers' eps, a learning rate large enough that
// five steps move the parameters visibly, clipping that engages (the first gradients of this model
// have norm ~1.5).
inline RunOptions TinyOptions(Optimizer optimizer) {
  RunOptions o;
  o.corpus = ShippedCorpus();
  o.hyper.lr = optimizer == LAMB ? 1e-2f : 3e-3f;
  o.hyper.beta2 = 0.95f;
  o.hyper.eps = optimizer == LAMB ? 1e-6f : 1e-8f;
  o.hyper.weight_decay = 0.01f;
  o.clip_norm = 1.0f;
  return o;
}

struct ReferenceRun {
  std::vector<float> losses, grad_norms, params;
};

// The single-process reference: Gpt on the whole global batch (B = global_batch rows of step s,
// BatchSampler's rows 0..G-1), then clipping and the optimizer over the flat arrays.
inline Result<ReferenceRun> RunReference(const Plan& plan, const RunOptions& o, int steps) {
  MS_ASSIGN_OR_RETURN(GptConfig c, GptConfigFromModel(plan.model()));
  const int G = static_cast<int>(plan.training().global_batch()), T = c.seq_len;
  MS_ASSIGN_OR_RETURN(std::vector<int32_t> tokens, LoadTrainingTokens(o.corpus));
  MS_ASSIGN_OR_RETURN(BatchSampler sampler,
                      BatchSampler::Create(std::move(tokens), G, T, c.vocab, o.data_seed));
  Gpt gpt(c, G, T);
  gpt.InitParams(o.param_seed);
  const std::vector<ParamSegment> segments = SegmentsOf(gpt.layout());
  AdamW adamw(gpt.params().size());
  Lamb lamb(gpt.params().size());
  std::vector<int32_t> in(static_cast<size_t>(G) * T), tg(in.size());
  ReferenceRun run;
  for (int step = 0; step < steps; ++step) {
    sampler.Sample(step, in.data(), tg.data());
    gpt.ZeroGrad();
    run.losses.push_back(gpt.Forward(in.data(), tg.data()));
    gpt.Backward();
    run.grad_norms.push_back(ClipGradNorm(gpt.grads().data(), gpt.grads().size(), o.clip_norm));
    if (plan.training().optimizer() == LAMB) {
      lamb.Step(gpt.params().data(), gpt.grads().data(), segments, o.hyper);
    } else {
      adamw.Step(gpt.params().data(), gpt.grads().data(), segments, o.hyper);
    }
  }
  run.params = gpt.params();
  return run;
}

inline float MaxAbsDiff(const std::vector<float>& a, const std::vector<float>& b) {
  float m = a.size() == b.size() ? 0.0f : 1e30f;
  for (size_t i = 0; i < std::min(a.size(), b.size()); ++i) m = std::max(m, std::abs(a[i] - b[i]));
  return m;
}

}  // namespace megascale::exec::testing
