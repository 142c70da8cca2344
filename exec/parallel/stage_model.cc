#include "exec/parallel/stage_model.h"

#include <cstdlib>

#include "exec/parallel/unit_pass.h"

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

Status StageModel::RunUnit(const TpContext& ctx, bool forward, int chunk, int mb, const std::vector<const Op*>& ops,
                           const MicroBatchData& data, const float* input, float* loss, float dloss) {
  const TpDims& d = dims_;
  const int per = config_.layers / virtual_stages();
  const UnitPlace place{chunk, mb, virtual_stage(chunk) * per, per};
  if (forward) {
    auto acts = std::make_unique<UnitActs>();
    acts->input = DeviceBuffer(device_, Sz(d.rows, d.C));
    if (!is_first(chunk)) device_->Copy(acts->input.data(), input, Sz(d.rows, d.C));  // else the embedding's
    PassState s(ctx, d, *this, *acts, data);
    s.loss = loss;
    s.stream = acts->input.data();
    MS_RETURN_IF_ERROR(RunUnitPass(s, ops, place));
    if (setup_.recompute == RECOMPUTE_FULL) {
      for (TpBlockActs& b : acts->blocks) b.KeepOnlyOutput();
    }
    acts_[{chunk, mb}] = std::move(acts);
    return Status::Ok();
  }
  UnitActs& a = *acts_.at({chunk, mb});
  PassState s(ctx, d, *this, a, data);
  s.backward = true;
  s.dloss = dloss;
  s.dcur = DeviceBuffer(device_, Sz(d.rows, d.C));
  s.dprev = DeviceBuffer(device_, Sz(d.rows, d.C));
  if (!is_last(chunk)) device_->Copy(s.dcur.data(), input, Sz(d.rows, d.C));  // else the head's
  MS_RETURN_IF_ERROR(RunUnitPass(s, ops, place));
  a.dinput = std::move(s.dcur);
  return Status::Ok();
}

const float* StageModel::Output(int chunk, int mb) const { return acts_.at({chunk, mb})->output(); }

const float* StageModel::InputGrad(int chunk, int mb) const { return acts_.at({chunk, mb})->dinput.data(); }

void StageModel::Release(int chunk, int mb) { acts_.erase({chunk, mb}); }

}  // namespace exec
}  // namespace megascale
