// Finite-difference checks of a whole transformer layer, serial and parallel, full and windowed:
// every parameter of the layer and its input.
#include <gtest/gtest.h>

#include "exec/model/block.h"
#include "tests/exec/grad_check.h"

namespace megascale {
namespace exec {
namespace {

using testing::CheckGradient;
using testing::RandomVector;
using testing::WeightedSum;

GptConfig TinyConfig(bool parallel, int window, int kv_heads) {
  GptConfig c;
  c.layers = 1;
  c.channels = 8;
  c.heads = 2;
  c.kv_heads = kv_heads;
  c.head_dim = 4;
  c.ffn = 16;
  c.seq_len = 5;
  c.vocab = 11;
  c.parallel_block = parallel;
  c.window = window;
  return c;
}

void CheckBlock(const std::string& name, const GptConfig& c) {
  const int B = 2, T = c.seq_len;
  const ParamLayout layout = BuildGptParamLayout(c);
  // O(1) parameters instead of the 0.02 init: every path (attention, MLP, both norms) then carries
  // a gradient of the same order, so a wrong term cannot hide under a small one.
  auto params = RandomVector(layout.total, 1, 0.5f);
  auto x = RandomVector(static_cast<size_t>(B) * T * c.channels, 2);
  auto r = RandomVector(x.size(), 3);
  BlockActs acts(c, B, T);
  auto loss = [&] {
    BlockForward(c, BlockParamsAt(layout, 0, params.data()), x.data(), &acts);
    return WeightedSum(acts.out, r);
  };
  loss();
  std::vector<float> grads(layout.total, 0.0f), dx(x.size(), 0.0f);
  BlockBackward(c, BlockParamsAt(layout, 0, params.data()), BlockGradsAt(layout, 0, grads.data()),
                x.data(), acts, r.data(), dx.data());
  CheckGradient(name + " dx", x.data(), dx.data(), x.size(), loss);
  int checked_tensors = 0;
  for (const ParamTensor& t : layout.tensors) {
    if (t.layer != 0) continue;
    CheckGradient(name + " " + t.name, params.data() + t.offset, grads.data() + t.offset, t.size, loss);
    ++checked_tensors;
  }
  EXPECT_EQ(checked_tensors, c.parallel_block ? 10 : 12);  // the parallel block has no ln2
}

TEST(BlockGrad, Serial) { CheckBlock("serial", TinyConfig(false, 0, 2)); }
TEST(BlockGrad, SerialSlidingWindow) { CheckBlock("serial w2", TinyConfig(false, 2, 2)); }
TEST(BlockGrad, Parallel) { CheckBlock("parallel", TinyConfig(true, 0, 2)); }
TEST(BlockGrad, ParallelSlidingWindowGqa) { CheckBlock("parallel w3 gqa", TinyConfig(true, 3, 1)); }

TEST(Block, ParallelBlockHasOneLayerNorm) {
  const ParamLayout serial = BuildGptParamLayout(TinyConfig(false, 0, 2));
  const ParamLayout parallel = BuildGptParamLayout(TinyConfig(true, 0, 2));
  EXPECT_NE(serial.Lookup("h0.ln2_w"), nullptr);
  EXPECT_EQ(parallel.Lookup("h0.ln2_w"), nullptr);
  EXPECT_EQ(serial.total - parallel.total, 2u * 8u);  // ln2 gain and bias, C = 8 each
}

}  // namespace
}  // namespace exec
}  // namespace megascale
