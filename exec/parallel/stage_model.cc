#include "exec/parallel/stage_model.h"

#include <cstdlib>
#include <optional>

namespace megascale {
namespace exec {
namespace {

size_t Sz(int a, int b) { return static_cast<size_t>(a) * b; }

}  // namespace

ShardSpec ShardSpecOf(const GptConfig& c, const StageSetup& s) {
  ShardSpec spec;
  spec.tp_rank = s.tp_rank;
  spec.tp = s.tp;
  const int V = s.pp * s.vp, per = c.layers / V;
  for (int chunk = 0; chunk < s.vp; ++chunk) {
    const int v = chunk * s.pp + s.stage;
    for (int l = v * per; l < (v + 1) * per; ++l) spec.layers.push_back(l);
    if (v == 0) spec.embedding = true;
    if (v == V - 1) spec.head = true;
  }
  return spec;
}

struct StageModel::Acts {
  DeviceBuffer input;  // (rows,C): the chunk's input (the embedding slice on v = 0)
  std::vector<TpBlockActs> blocks;
  // Last virtual stage: the final LayerNorm of the rows held, gathered to all N rows with SP (the
  // head reads all N), and the probabilities over this rank's vocabulary rows (N, vocab rows).
  DeviceBuffer lnf, lnf_mean, lnf_rstd, lnf_full, probs;
  DeviceBuffer dinput;                          // (rows,C) after Backward
};

StageModel::StageModel(const GptConfig& config, const StageSetup& setup, Device* device)
    : config_(config),
      setup_(setup),
      device_(device),
      full_(BuildGptParamLayout(config)),
      local_(BuildStageParams(config, full_, ShardSpecOf(config, setup))),
      dims_(MakeTpDims(config, setup.micro_batch, config.seq_len, setup.tp_rank, setup.tp,
                       setup.sequence_parallel)),
      vocab_(VocabShardOf(config.vocab, setup.tp_rank, setup.tp)),
      params_(device, local_.total),
      grads_(device, local_.total) {
  dims_.recompute = setup.recompute;
  dims_.overlap_tp = setup.overlap_tp && dims_.split();
}

StageModel::~StageModel() = default;

void StageModel::InitParams(uint64_t seed) {
  std::vector<float> host(local_.total);
  InitLocalParams(full_, local_, seed, host.data());
  device_->Upload(params_.data(), host.data(), host.size());
}

const float* StageModel::P(const char* name) const {
  const LocalTensor* t = local_.Lookup(name);
  if (t == nullptr) std::abort();  // a programming error: the chunk does not hold this tensor
  return params_.data() + t->offset;
}
float* StageModel::G(const char* name) const {
  const LocalTensor* t = local_.Lookup(name);
  if (t == nullptr) std::abort();
  return grads_.data() + t->offset;
}
const char* StageModel::head_name() const { return config_.tied_lm_head ? "wte" : "lm_head_w"; }

BlockParams StageModel::ParamsOf(int layer) const {
  const std::string pre = "h" + std::to_string(layer) + ".";
  auto at = [&](const char* n) -> const float* {
    const LocalTensor* t = local_.Lookup(pre + n);
    return t == nullptr ? nullptr : params_.data() + t->offset;
  };
  BlockParams p;
  p.ln1_w = at("ln1_w"), p.ln1_b = at("ln1_b"), p.qkv_w = at("qkv_w"), p.qkv_b = at("qkv_b");
  p.attproj_w = at("attproj_w"), p.attproj_b = at("attproj_b"), p.ln2_w = at("ln2_w"), p.ln2_b = at("ln2_b");
  p.fc_w = at("fc_w"), p.fc_b = at("fc_b"), p.fcproj_w = at("fcproj_w"), p.fcproj_b = at("fcproj_b");
  return p;
}

BlockGrads StageModel::GradsOf(int layer) const {
  const std::string pre = "h" + std::to_string(layer) + ".";
  auto at = [&](const char* n) -> float* {
    const LocalTensor* t = local_.Lookup(pre + n);
    return t == nullptr ? nullptr : grads_.data() + t->offset;
  };
  BlockGrads g;
  g.ln1_w = at("ln1_w"), g.ln1_b = at("ln1_b"), g.qkv_w = at("qkv_w"), g.qkv_b = at("qkv_b");
  g.attproj_w = at("attproj_w"), g.attproj_b = at("attproj_b"), g.ln2_w = at("ln2_w"), g.ln2_b = at("ln2_b");
  g.fc_w = at("fc_w"), g.fc_b = at("fc_b"), g.fcproj_w = at("fcproj_w"), g.fcproj_b = at("fcproj_b");
  return g;
}

Status StageModel::Forward(const TpContext& ctx, int chunk, int mb, const MicroBatchData& data,
                           const float* input, float* loss) {
  const TpDims& d = dims_;
  const int C = d.C, Vs = vocab_.rows;
  const int per = config_.layers / virtual_stages(), first_layer = virtual_stage(chunk) * per;
  OpRecorder* rec = ctx.recorder;
  TpRegions regions(ctx, d);
  auto acts = std::make_unique<Acts>();
  acts->input = DeviceBuffer(device_, Sz(d.rows, C));
  if (is_first(chunk)) {
    // Vocabulary-parallel lookup of all N rows: this rank's table rows, positions added by TP
    // rank 0 only so that the sum counts them once; the sum leaves through g (SP: this rank's rows).
    DeviceBuffer partial(device_, Sz(d.N, C));
    rec->Compute(EMBEDDING, [&] {
      device_->EmbeddingForward(partial.data(), data.tokens, P("wte"), setup_.tp_rank == 0 ? P("wpe") : nullptr,
                                d.B, d.T, C, vocab_.begin, Vs);
    });
    MS_RETURN_IF_ERROR(regions.ExitForward(partial.data(), acts->input.data()));
  } else {
    device_->Copy(acts->input.data(), input, Sz(d.rows, C));
  }
  const float* x = acts->input.data();
  for (int k = 0; k < per; ++k) {
    rec->SetLayer(first_layer + k);
    acts->blocks.emplace_back(device_, d);
    MS_RETURN_IF_ERROR(TpBlockForward(ctx, d, ParamsOf(first_layer + k), x, &acts->blocks.back()));
    x = acts->blocks.back().out.data();
  }
  if (setup_.recompute == RECOMPUTE_FULL) {
    for (TpBlockActs& b : acts->blocks) b.KeepOnlyOutput();
  }
  rec->SetLayer(-1);
  if (is_last(chunk)) {
    acts->lnf = DeviceBuffer(device_, Sz(d.rows, C));
    acts->lnf_mean = DeviceBuffer(device_, d.rows);
    acts->lnf_rstd = DeviceBuffer(device_, d.rows);
    acts->lnf_full = DeviceBuffer(device_, d.split() ? Sz(d.N, C) : 0);
    acts->probs = DeviceBuffer(device_, Sz(d.N, Vs));
    DeviceBuffer logits(device_, Sz(d.N, Vs));
    rec->Compute(LAYERNORM, [&] {
      device_->LayerNormForward(acts->lnf.data(), acts->lnf_mean.data(), acts->lnf_rstd.data(), x, P("lnf_w"),
                                P("lnf_b"), d.rows, C);
    });
    MS_RETURN_IF_ERROR(EnterAndLinear(ctx, d, regions, acts->lnf.data(), acts->lnf_full.data(), LM_HEAD,
                                      P(head_name()), nullptr, Vs, logits.data())
                           .status());
    Status gathered;
    rec->Compute(CROSS_ENTROPY, [&] {
      if (setup_.tp == 1) {
        *loss = device_->CrossEntropyForward(acts->probs.data(), logits.data(), data.targets, d.N, Vs);
        return;
      }
      // Vocabulary-parallel: 3 floats a token from every TP peer (one all-gather inside the op:
      // the plan counts it with the op, as Megatron-LM's fused vocab-parallel cross-entropy).
      DeviceBuffer stats(device_, Sz(d.N, 3)), all(device_, Sz(d.N, 3) * setup_.tp);
      device_->CrossEntropyShardStats(stats.data(), logits.data(), data.targets, d.N, Vs, vocab_.begin);
      device_->Synchronize();
      gathered = ctx.tp->AllGather(stats.data(), all.data(), Sz(d.N, 3));
      if (!gathered.ok()) return;
      *loss = device_->CrossEntropyShardFinish(acts->probs.data(), logits.data(), all.data(), setup_.tp, d.N, Vs);
    });
    MS_RETURN_IF_ERROR(gathered);
  }
  acts_[{chunk, mb}] = std::move(acts);
  return Status::Ok();
}

const float* StageModel::Output(int chunk, int mb) const {
  const Acts& a = *acts_.at({chunk, mb});
  return a.blocks.empty() ? a.input.data() : a.blocks.back().out.data();
}

Status StageModel::Backward(const TpContext& ctx, int chunk, int mb, const MicroBatchData& data,
                            const float* dout, float dloss) {
  const TpDims& d = dims_;
  const int C = d.C, Vs = vocab_.rows;
  const int per = config_.layers / virtual_stages(), first_layer = virtual_stage(chunk) * per;
  OpRecorder* rec = ctx.recorder;
  TpRegions regions(ctx, d);
  Acts& a = *acts_.at({chunk, mb});
  DeviceBuffer dcur(device_, Sz(d.rows, C)), dprev(device_, Sz(d.rows, C));
  if (is_last(chunk)) {
    const float* last = a.blocks.empty() ? a.input.data() : a.blocks.back().out.data();
    const float* y = d.split() ? a.lnf_full.data() : a.lnf.data();
    DeviceBuffer dlogits(device_, Sz(d.N, Vs)), dy(device_, Sz(d.N, C)), dlnf(device_, Sz(d.rows, C));
    rec->Compute(CROSS_ENTROPY, [&] {
      device_->CrossEntropyBackward(dlogits.data(), a.probs.data(), data.targets, dloss, d.N, Vs, vocab_.begin);
    });
    // The head's input gradient is a partial sum over the vocabulary shards: f's backward.
    MS_RETURN_IF_ERROR(LinearBackwardAndEnter(ctx, d, regions, LM_HEAD, dy.data(), G(head_name()), nullptr,
                                              dlogits.data(), y, P(head_name()), Vs, dlnf.data()));
    rec->Compute(LAYERNORM, [&] {
      device_->LayerNormBackward(dcur.data(), G("lnf_w"), G("lnf_b"), dlnf.data(), last, P("lnf_w"),
                                 a.lnf_mean.data(), a.lnf_rstd.data(), d.rows, C);
    });
  } else {
    device_->Copy(dcur.data(), dout, Sz(d.rows, C));
  }
  for (int k = per - 1; k >= 0; --k) {
    rec->SetLayer(first_layer + k);
    const float* x = k > 0 ? a.blocks[k - 1].out.data() : a.input.data();
    device_->Zero(dprev.data(), dprev.size());
    const TpBlockActs* acts = &a.blocks[k];
    std::optional<TpBlockActs> again;
    if (setup_.recompute == RECOMPUTE_FULL) {
      again.emplace(device_, d);
      rec->SetPhase(RECOMPUTE);
      MS_RETURN_IF_ERROR(TpBlockForward(ctx, d, ParamsOf(first_layer + k), x, &*again));
      rec->SetPhase(BACKWARD);
      acts = &*again;
    }
    MS_RETURN_IF_ERROR(TpBlockBackward(ctx, d, ParamsOf(first_layer + k), GradsOf(first_layer + k), x,
                                       *acts, dcur.data(), dprev.data()));
    std::swap(dcur, dprev);
  }
  rec->SetLayer(-1);
  if (is_first(chunk)) {
    // g's backward gives every rank all N rows' gradient: this rank's table rows and the whole of
    // wpe's gradient (complete on every TP peer, so not among the SP-partial ones).
    DeviceBuffer full(device_, d.split() ? Sz(d.N, C) : 0);
    MS_ASSIGN_OR_RETURN(const float* dfull, regions.ExitBackward(dcur.data(), full.data()));
    rec->Compute(EMBEDDING, [&] {
      device_->EmbeddingBackward(G("wte"), G("wpe"), dfull, data.tokens, d.B, d.T, C, vocab_.begin, vocab_.rows);
    });
  }
  a.dinput = std::move(dcur);
  return Status::Ok();
}

const float* StageModel::InputGrad(int chunk, int mb) const { return acts_.at({chunk, mb})->dinput.data(); }

void StageModel::Release(int chunk, int mb) { acts_.erase({chunk, mb}); }

}  // namespace exec
}  // namespace megascale
