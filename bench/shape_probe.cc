// The cost model's per-kernel predictions over a grid of transformer-layer shapes, for
// bench/shape_check.py to time on a real GPU: every GEMM a layer's GEMM ops run on one GPU
// (planner/cost/op_costs.h OpGemms, forward and backward), its fused attention and its LayerNorm, at
// hidden 1,024-12,288, TP 1-8 (one GPU's share: the collectives are not timed) and micro-batch 1-4;
// and unfused attention at vTrain's shapes.
// Each line of the output is one JSON object: the kernel's shape and CostModel's time for it.
// Nothing is fitted to what the GPU measures: the check holds the stored calibration against it.
//   shape_probe GPU > kernels.jsonl      (GPU: a catalogue name, e.g. H200)
#include <cstdio>
#include <cstdlib>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "bench/probe_scenario.h"
#include "planner/cost/cost_model.h"
#include "planner/cost/op_costs.h"

namespace ms = megascale;

namespace {

struct ModelShape {
  int hidden, heads;
};

// The resolved scenario of one model shape on `gpu` (8 GPUs of a node, TP x DP); exits naming the
// rule a shape breaks.
ms::Scenario Resolved(const std::string& gpu, const ModelShape& m, int tp, int seq = 2048) {
  const std::string text = "name: \"probe\" cluster { gpu: \"" + gpu +
                           "\" num_gpus: 8 gpus_per_node: 8 fabric: NONBLOCKING }\n"
                           "model { layers: 8 hidden: " + std::to_string(m.hidden) +
                           " heads: " + std::to_string(m.heads) +
                           " seq_len: " + std::to_string(seq) + " vocab: 50304 }\n"
                           "training { global_batch: 64 micro_batch: 1 }\n"
                           "layout { tp: " + std::to_string(tp) + " pp: 1 dp: " +
                           std::to_string(8 / tp) + " }\n";
  return ms::bench::ResolvedOrExit(text, "shape_probe");
}

// One line per distinct GEMM of the layer's GEMM ops at this shape (layers of one shape repeat
// them), with the cost model's time.
void PrintGemms(const ms::CostModel& cost, const ms::OpShape& shape, const char* tag,
                std::set<std::tuple<int, double, double, double, double>>* seen) {
  const ms::OpKind gemm_ops[] = {ms::QKV_GEMM, ms::ATTN_PROJ_GEMM, ms::FFN_UP_GEMM, ms::FFN_DOWN_GEMM};
  for (ms::OpKind op : gemm_ops) {
    for (ms::Phase phase : {ms::FORWARD, ms::BACKWARD}) {
      const std::vector<ms::GemmDims> gemms = ms::OpGemms(op, phase, shape);
      for (size_t i = 0; i < gemms.size(); ++i) {
        const ms::GemmDims& g = gemms[i];
        // Which GEMM of the op (OpGemms' order): the operands' layout in memory differs, and
        // cuBLAS's speed with it.
        const int role = phase == ms::FORWARD ? 0 : 1 + static_cast<int>(i);
        if (!seen->insert({role, g.m, g.n, g.k, g.batch}).second) continue;
        std::printf(
            "{\"kind\":\"gemm\",\"op\":\"%s\",\"phase\":\"%s\",\"role\":\"%s\",%s,"
            "\"m\":%.0f,\"n\":%.0f,\"k\":%.0f,\"batch\":%.0f,\"predicted_s\":%.9g}\n",
            ms::OpKind_Name(op).c_str(), ms::Phase_Name(phase).c_str(),
            role == 0 ? "forward" : role == 1 ? "input_grad" : "weight_grad", tag, g.m, g.n, g.k, g.batch,
            cost.GemmTime(g.m, g.n, g.k, g.batch));
      }
    }
  }
}

// Fused attention at this shape, and the LayerNorm where TP is 1 (SP splits a LayerNorm's rows;
// the TP 1 shapes cover its sizes).
void PrintAttentionAndNorm(const ms::CostModel& cost, const ms::OpShape& shape, const char* tag, int tp,
                           int micro) {
  const ms::AttentionWork w = ms::AttentionWorkOf(shape);
  for (ms::Phase phase : {ms::FORWARD, ms::BACKWARD}) {
    std::printf(
        "{\"kind\":\"attention\",\"op\":\"ATTENTION\",\"phase\":\"%s\",%s,"
        "\"batch_heads\":%.0f,\"head_dim\":%.0f,\"causal\":true,\"predicted_s\":%.9g}\n",
        ms::Phase_Name(phase).c_str(), tag, w.batch_heads, w.head_dim, cost.OpTime(ms::ATTENTION, phase, shape));
  }
  if (tp != 1) return;
  for (ms::Phase phase : {ms::FORWARD, ms::BACKWARD}) {
    std::printf(
        "{\"kind\":\"layernorm\",\"op\":\"LAYERNORM\",\"phase\":\"%s\",%s,"
        "\"rows\":%d,\"predicted_s\":%.9g}\n",
        ms::Phase_Name(phase).c_str(), tag, micro * 2048, cost.OpTime(ms::LAYERNORM, phase, shape));
  }
}

// Unfused attention (batched GEMMs, softmax and dropout over the scores in HBM) at vTrain's shapes
// (seq 1,024, 16 heads, hidden 1,024 and 2,048, micro-batch 1-8): the path of the
// Megatron-DeepSpeed and Megatron-LM 2021 stacks that every A100 reference row runs, with its fused
// softmax at every shape (this probe's scenario names no stack: softmax_batch_multiple 1), as
// bench/shape_check.py runs one softmax kernel at every shape.
void PrintUnfusedAttention(const std::string& gpu) {
  for (const ModelShape& m : {ModelShape{1024, 16}, ModelShape{2048, 16}}) {
    for (int tp : {1, 2, 4, 8}) {
      const ms::Scenario scenario = Resolved(gpu, m, tp, 1024);
      const ms::CostModel cost(scenario.cluster());
      for (int micro : {1, 2, 4, 8}) {
        ms::OpShape shape = ms::OpShapeOf(scenario.model(), scenario.layout(), micro);
        shape.flash_attention = false;
        const ms::AttentionWork w = ms::AttentionWorkOf(shape);
        for (ms::Phase phase : {ms::FORWARD, ms::BACKWARD}) {
          std::printf(
              "{\"kind\":\"attention_unfused\",\"op\":\"ATTENTION\",\"phase\":\"%s\","
              "\"hidden\":%d,\"heads\":%d,\"tp\":%d,\"micro\":%d,\"seq\":1024,"
              "\"batch_heads\":%.0f,\"head_dim\":%.0f,\"causal\":true,\"predicted_s\":%.9g}\n",
              ms::Phase_Name(phase).c_str(), m.hidden, m.heads, tp, micro, w.batch_heads, w.head_dim,
              cost.OpTime(ms::ATTENTION, phase, shape));
        }
      }
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: shape_probe GPU   (a catalogue name, e.g. H200)\n");
    return 2;
  }
  const std::string gpu = argv[1];
  const ModelShape models[] = {{1024, 16}, {2048, 16}, {4096, 32}, {8192, 64}, {12288, 96}};
  std::set<std::tuple<int, double, double, double, double>> gemms_seen;
  for (const ModelShape& m : models) {
    for (int tp : {1, 2, 4, 8}) {
      const ms::Scenario scenario = Resolved(gpu, m, tp);
      const ms::CostModel cost(scenario.cluster());
      for (int micro : {1, 2, 4}) {
        const ms::OpShape shape = ms::OpShapeOf(scenario.model(), scenario.layout(), micro);
        char tag[160];
        std::snprintf(tag, sizeof(tag), "\"hidden\":%d,\"heads\":%d,\"tp\":%d,\"micro\":%d,\"seq\":2048", m.hidden,
                      m.heads, tp, micro);
        PrintGemms(cost, shape, tag, &gemms_seen);
        PrintAttentionAndNorm(cost, shape, tag, tp, micro);
      }
    }
  }
  PrintUnfusedAttention(gpu);
  return 0;
}
