#include "planner/cost/memory.h"

#include <gtest/gtest.h>

#include "planner/cost/op_costs.h"
#include "tests/planner/scenarios.h"

namespace megascale {
namespace {

TEST(Memory, InFlightMicrobatchesOfTheSchedules) {
  // 1F1B: stage i holds min(p - i, m) micro-batches.
  EXPECT_EQ(MaxInFlightUnits(StageSchedule(0, 8, 1, 32)), 8);
  EXPECT_EQ(MaxInFlightUnits(StageSchedule(7, 8, 1, 32)), 1);
  EXPECT_EQ(MaxInFlightUnits(StageSchedule(0, 8, 1, 3)), 3);
  // Interleaved: Megatron's warm-up, 2(p-1) + (v-1)p, plus the one in flight.
  EXPECT_EQ(MaxInFlightUnits(StageSchedule(0, 8, 6, 32)), 14 + 40 + 1);
  EXPECT_EQ(MaxInFlightUnits(StageSchedule(7, 8, 6, 32)), 40 + 1);
}

TEST(Memory, ZeroStagesShardStates) {
  const ModelSpec m = LookupModelPreset("gpt-175b").value();
  LayoutSpec l = testing::Layout(8, 8, 192, 6);
  // A middle stage holds 12 layers' TP shards.
  const double params = 12 * LayerParams(m) / 8;
  l.set_zero_stage(0);
  MemoryEstimate z0 = StageMemory(m, l, 1, 3, 10);
  EXPECT_DOUBLE_EQ(z0.weights_bytes, 2 * params);
  // Megatron-LM's fp32 gradient buffer by default; 16-bit gradients where the stack keeps them.
  EXPECT_DOUBLE_EQ(z0.grads_bytes, 4 * params);
  l.set_fp32_grads(false);  // 16-bit, copied into fp32 for the update
  EXPECT_DOUBLE_EQ(StageMemory(m, l, 1, 3, 10).grads_bytes, 6 * params);
  l.set_fp32_grads(true);
  EXPECT_DOUBLE_EQ(z0.optimizer_bytes, 12 * params);
  l.set_zero_stage(1);
  MemoryEstimate z1 = StageMemory(m, l, 1, 3, 10);
  EXPECT_DOUBLE_EQ(z1.optimizer_bytes, 12 * params / 192);
  EXPECT_DOUBLE_EQ(z1.grads_bytes, 4 * params);
  EXPECT_DOUBLE_EQ(z1.transient_bytes, 0);  // a middle stage, nothing recomputed
  l.set_zero_stage(2);
  EXPECT_DOUBLE_EQ(StageMemory(m, l, 1, 3, 10).grads_bytes, 4 * params / 192);
  // Activations with SP: 34 s b h / t per layer; 2 layers per chunk, 10 chunks in flight.
  EXPECT_DOUBLE_EQ(z1.activation_bytes, 34.0 * 2048 * 12288 / 8 * 2 * 10);
  l.set_recompute(RECOMPUTE_FULL);
  const MemoryEstimate full = StageMemory(m, l, 1, 3, 10);
  EXPECT_DOUBLE_EQ(full.activation_bytes, 2.0 * 2048 * 12288 / 8 * 2 * 10);
  // The layer recomputed in its backward holds all it would have kept.
  EXPECT_DOUBLE_EQ(full.transient_bytes, 34.0 * 2048 * 12288 / 8);
}

TEST(Memory, KorthikantiPerLayerActivations) {
  // Korthikanti et al. 2022, section 4: s b h (10 + 24 / t + 5 a s / (h t)) without SP.
  const ModelSpec m = LookupModelPreset("gpt-175b").value();
  LayoutSpec l = testing::Layout(8, 8, 1, 1);
  l.set_sequence_parallel(false);
  const double s = 2048, h = 12288, a = 128, t = 8, sbh = s * h;  // MegaScale's 175B: 128 heads
  EXPECT_DOUBLE_EQ(LayerActivationBytes(m, l, 1, true), sbh * (10 + 24 / t + 5 * a * s / (h * t)));
  EXPECT_DOUBLE_EQ(LayerActivationBytes(m, l, 1, false), sbh * (10 + 24 / t));
  // Selective recompute keeps no scores, unfused attention or not.
  l.mutable_kernels()->set_flash_attention(false);
  l.set_recompute(RECOMPUTE_SELECTIVE);
  const MemoryEstimate sel = StageMemory(m, l, 1, 3, 1);
  EXPECT_DOUBLE_EQ(sel.activation_bytes, 12 * sbh * (10 + 24 / t));
  // ... but the layer it re-scores holds them for a moment.
  EXPECT_DOUBLE_EQ(sel.transient_bytes, 5 * a * s * s / t);
}

TEST(Memory, GatedMlpAndGroupedHeads) {
  ModelSpec m = LookupModelPreset("gpt-175b").value();
  LayoutSpec l = testing::Layout(1, 1, 1, 1);
  const double plain = LayerActivationBytes(m, l, 1, false);
  // A gated MLP keeps gate, value and product: 6 sbf instead of 4 sbf.
  m.set_gated_mlp(true);
  const double sbh = 2048.0 * 12288;
  EXPECT_DOUBLE_EQ(LayerActivationBytes(m, l, 1, false) - plain, 2 * 4 * sbh);
  // 8 K/V heads of 128 shrink K and V: 4 sbh x 8/128.
  m.set_kv_heads(8);
  EXPECT_DOUBLE_EQ(LayerActivationBytes(m, l, 1, false) - plain, 8 * sbh - 4 * sbh * (1 - 8.0 / 128));
}

TEST(Memory, EmbeddingsOnOneGpuAreCountedOnce) {
  ModelSpec m = LookupModelPreset("gpt-175b").value();
  const double layers = 96 * LayerParams(m), word = WordEmbeddingParams(m);
  // One stage: a tied head is the embedding's own matrix.
  EXPECT_DOUBLE_EQ(ChunkParamsPerGpu(m, 1, 0, 1, 1), layers + EmbeddingParams(m));
  // Two stages: the last one keeps a copy.
  EXPECT_DOUBLE_EQ(ChunkParamsPerGpu(m, 1, 1, 2, 2), layers / 2 + EmbeddingParams(m));
  // One stage of two chunks: the last chunk is on the embedding's GPU.
  EXPECT_DOUBLE_EQ(ChunkParamsPerGpu(m, 1, 1, 2, 1), layers / 2 + 2 * 12288);
  m.set_tied_embeddings(false);
  EXPECT_DOUBLE_EQ(ChunkParamsPerGpu(m, 1, 0, 1, 1), layers + EmbeddingParams(m) + word);
  EXPECT_DOUBLE_EQ(ModelParams(m), layers + EmbeddingParams(m) + word);
}

}  // namespace
}  // namespace megascale
