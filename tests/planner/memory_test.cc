#include "planner/memory.h"

#include <gtest/gtest.h>

#include "planner/op_costs.h"
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
  EXPECT_DOUBLE_EQ(z0.grads_bytes, 2 * params);
  EXPECT_DOUBLE_EQ(z0.optimizer_bytes, 12 * params);
  l.set_zero_stage(1);
  MemoryEstimate z1 = StageMemory(m, l, 1, 3, 10);
  EXPECT_DOUBLE_EQ(z1.optimizer_bytes, 12 * params / 192);
  EXPECT_DOUBLE_EQ(z1.grads_bytes, 2 * params);
  l.set_zero_stage(2);
  EXPECT_DOUBLE_EQ(StageMemory(m, l, 1, 3, 10).grads_bytes, 2 * params / 192);
  // Activations with SP: 34 s b h / t per layer; 2 layers per chunk, 10 chunks in flight.
  EXPECT_DOUBLE_EQ(z1.activation_bytes, 34.0 * 2048 * 12288 / 8 * 2 * 10);
  l.set_recompute(RECOMPUTE_FULL);
  EXPECT_DOUBLE_EQ(StageMemory(m, l, 1, 3, 10).activation_bytes, 2.0 * 2048 * 12288 / 8 * 2 * 10);
}

}  // namespace
}  // namespace megascale
