// The planner's GPU time and kernel count for one layer pass of vTrain's stack, over the grid
// bench/eager_layer.py times on a real GPU (hidden 1,024 / 2,048 with 16 heads, TP 1-8 as one
// GPU's share, micro-batch 1-8, seq 1,024): the plan's own ops of layer 0, micro-batch 0, forward
// (FORWARD) and backward (RECOMPUTE and BACKWARD), TP collectives left out as the measured layer
// has none, with layout.kernels.launch_us 0 so that no op waits for the host, and
// softmax_batch_multiple 1: eager_layer.py runs one softmax kernel at every shape (the fused
// kernel's count), not Megatron's PyTorch fallback at TP 8 and micro-batch 1.
// Each output line is one JSON object per (shape, pass). bench/layer_check.sh compares them.
//   layer_probe GPU > passes.jsonl      (GPU: a catalogue name, e.g. H200)
#include <cstdio>
#include <cstdlib>
#include <string>

#include "bench/probe_scenario.h"
#include "planner/cost/op_costs.h"
#include "planner/program/plan_builder.h"

namespace ms = megascale;

namespace {

// The resolved scenario: one node of `tp` GPUs running the layer at TP `tp`; exits naming the
// rule a shape breaks.
ms::Scenario Resolved(const std::string& gpu, int hidden, int tp, int micro) {
  const std::string text =
      "name: \"layer-probe\" stack: \"megatron-deepspeed\"\n"
      "cluster { gpu: \"" + gpu + "\" num_gpus: " + std::to_string(tp) + " gpus_per_node: " +
      std::to_string(tp) + " fabric: NONBLOCKING }\n"
      "model { layers: 4 hidden: " + std::to_string(hidden) +
      " heads: 16 seq_len: 1024 vocab: 50257 }\n"
      "training { global_batch: " + std::to_string(micro) + " micro_batch: " + std::to_string(micro) +
      " }\n"
      "layout { tp: " + std::to_string(tp) + " pp: 1 dp: 1 zero_stage: 0 recompute: RECOMPUTE_FULL "
      "schedule: ONE_F_ONE_B kernels { launch_us: 0 softmax_batch_multiple: 1 } }\n";
  return ms::bench::ResolvedOrExit(text, "layer_probe");
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: layer_probe GPU   (a catalogue name, e.g. H200)\n");
    return 2;
  }
  const std::string gpu = argv[1];
  for (int hidden : {1024, 2048}) {
    for (int tp : {1, 2, 4, 8}) {
      for (int micro : {1, 2, 4, 8}) {
        const ms::Scenario s = Resolved(gpu, hidden, tp, micro);
        ms::Result<ms::Plan> plan = ms::BuildPlan(s);
        if (!plan.ok()) {
          std::fprintf(stderr, "layer_probe: %s\n", plan.status().ToString().c_str());
          return 1;
        }
        const ms::OpShape shape = ms::OpShapeOf(s.model(), s.layout(), micro);
        double gpu_s[2] = {0, 0}, kernels[2] = {0, 0};
        for (const ms::Op& op : plan->stages(0).ops()) {
          if (op.layer() != 0 || op.microbatch() != 0 || op.lane() != ms::COMPUTE) continue;
          const int pass = op.phase() == ms::FORWARD ? 0 : 1;
          if (op.phase() != ms::FORWARD && op.phase() != ms::RECOMPUTE && op.phase() != ms::BACKWARD) continue;
          gpu_s[pass] += op.duration_s();
          kernels[pass] += ms::OpKernels(op.kind(), op.phase(), shape);
        }
        for (int pass : {0, 1}) {
          std::printf(
              "{\"hidden\":%d,\"heads\":16,\"tp\":%d,\"micro_batch\":%d,\"seq\":1024,\"pass\":\"%s\","
              "\"predicted_gpu_s\":%.9g,\"kernels\":%.0f}\n",
              hidden, tp, micro, pass == 0 ? "forward" : "backward", gpu_s[pass], kernels[pass]);
        }
      }
    }
  }
  return 0;
}
