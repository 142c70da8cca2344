// The cost model's figures against hand computation: GEMM shape efficiency (tiles over the SMs, edges, k loop),
// attention (executed FLOPs, the grid's occupancy, sliding window, unfused scores), memory-bound
// ops, NCCL bus-bandwidth formulas inside and across nodes, optimizer and per-step time.
#include "planner/cost/cost_model.h"

#include <gtest/gtest.h>

#include "planner/cost/op_costs.h"
#include "tests/planner/scenarios.h"
#include "topology/cluster.h"

namespace megascale {
namespace {

const ClusterSpec kA100 = testing::A100Cluster(16, NONBLOCKING);

// Round constants so hand computations stay readable.
CostConstants Simple() {
  CostConstants c;
  c.gpu = "A100";
  c.gemm_efficiency = 0.5;
  c.attention_efficiency = 0.5;
  c.network_efficiency = 0.5;
  c.network_step_latency_s = 1e-6;
  c.step_overhead_s = 0.1;
  c.sms = 108;
  c.hbm_efficiency = 0.5;
  c.nvlink_efficiency = 0.5;
  c.kernel_overhead_s = 1e-6;
  c.data_loading_s = 0.25;
  return c;
}

TEST(CostModel, RooflineTakesTheSlowerOfComputeAndMemory) {
  const CostModel cost(kA100, Simple());
  EXPECT_DOUBLE_EQ(cost.ComputeTime(QKV_GEMM, 1e12, 1e9), 1e12 / (312e12 * 0.5));
  EXPECT_DOUBLE_EQ(cost.ComputeTime(GELU, 0, 2039e6), 1e-3);
  // Element-wise kernels stream at the achievable bandwidth plus one kernel ramp.
  EXPECT_DOUBLE_EQ(cost.MemoryBoundTime(2039e6), 1e-6 + 2039e6 / (2039e9 * 0.5));
}

TEST(CostModel, GemmOfOneFullWaveRunsAtTheCalibratedEfficiency) {
  const CostModel cost(kA100, Simple());
  // 9 x 12 tiles of 256 x 128 = 108 tiles: one full wave on 108 SMs, no partial tile.
  const double m = 256 * 9, n = 128 * 12, k = 4096;
  const double factor = k / (k + 64);  // the k loop's ramp
  EXPECT_NEAR(cost.GemmTime(m, n, k), 1e-6 + 2 * m * n * k / (312e12 * 0.5 * factor), 1e-12);
}

TEST(CostModel, ATailWaveIsSharedOverTheSms) {
  const CostModel cost(kA100, Simple());
  const double n = 128 * 12, k = 4096;
  // m = 2305: 256 x 128 tiles need 10 x 12 = 120 (a wave and a bit on 108 SMs); 128 x 256 need
  // 19 x 6 = 114, the least edge waste: (2305 x 1536) / (114 x 128 x 256) of each tile useful. The
  // tail is spread over every SM (cuBLAS's stream-K), so it costs its share of the work, not a
  // second wave of 108 tiles.
  const double m = 2305;
  const double factor = (m * n) / (114 * 128 * 256) * k / (k + 64);
  EXPECT_NEAR(cost.GemmTime(m, n, k), 1e-6 + 2 * m * n * k / (312e12 * 0.5 * factor), 1e-12);
  // 0.04 % more FLOPs: about 5 % more time (the edge tiles); whole waves made it 1.67x.
  const double more = cost.GemmTime(m, n, k) / cost.GemmTime(m - 1, n, k);
  EXPECT_GT(more, 1.04);
  EXPECT_LT(more, 1.07);
}

TEST(CostModel, FewerTilesThanSmsLeaveSmsIdle) {
  const CostModel cost(kA100, Simple());
  // m = 256, n = 1,536: 12 big tiles, 24 of 128 x 128 or 48 of 64 x 128 for 108 SMs. The best
  // is the smallest tile at 0.7 of the big tile's throughput on 48 of the 108 SMs.
  const double m = 256, n = 128 * 12, k = 4096;
  const double factor = 0.7 * 48 / 108 * k / (k + 64);
  EXPECT_NEAR(cost.GemmTime(m, n, k), 1e-6 + 2 * m * n * k / (312e12 * 0.5 * factor), 1e-12);
}

TEST(CostModel, SkinnyGemmsAreSlowerPerFlop) {
  const CostModel cost(kA100, Simple());
  const double big = cost.GemmTime(8192, 8192, 8192) / (2.0 * 8192 * 8192 * 8192);
  const double skinny = cost.GemmTime(8192, 8192, 128) / (2.0 * 8192 * 8192 * 128);
  const double tiny = cost.GemmTime(64, 64, 64) / (2.0 * 64 * 64 * 64);
  EXPECT_GT(skinny, 1.3 * big);
  EXPECT_GT(tiny, 10 * big);
}

OpShape Shape175B(int window, bool flash) {
  OpShape s;
  s.model = LookupModelPreset("gpt-175b").value();
  s.model.set_sliding_window(window);
  s.micro_batch = 1;
  s.tp = 8;
  s.sequence_parallel = true;
  s.flash_attention = flash;
  return s;
}

TEST(CostModel, FlashAttentionRunsTheExecutedFlops) {
  const CostModel cost(kA100, Simple());
  const OpShape full = Shape175B(0, true);
  const AttentionWork w = AttentionWorkOf(full);
  // Causal: half of Megatron's counted s x s.
  EXPECT_DOUBLE_EQ(w.executed_flops, w.counted_flops / 2);
  EXPECT_DOUBLE_EQ(w.counted_flops, ComputeOpCost(ATTENTION, FORWARD, full).flops);
  // 128 heads / TP 8 = 16 per GPU, 2,048 / 128 = 16 blocks of queries: 256 CTAs on 108 SMs.
  const double occupancy = 256.0 / (256 + 108);
  EXPECT_NEAR(cost.AttentionTime(FORWARD, full),
              1e-6 + w.executed_flops / (312e12 * 0.5 * occupancy), 1e-12);
  // The backward recomputes the scores: 2.5 x the forward's work.
  EXPECT_NEAR(cost.AttentionTime(BACKWARD, full) - 1e-6,
              2.5 * (cost.AttentionTime(FORWARD, full) - 1e-6), 1e-12);
}

TEST(CostModel, FewHeadsPerGpuLeaveSmsIdle) {
  const CostModel cost(kA100, Simple());
  OpShape thin = Shape175B(0, true);  // 16 heads per GPU: 256 CTAs
  OpShape wide = thin;
  wide.micro_batch = 64;  // 16,384 CTAs: the grid's tail is under 1 % of the kernel
  const auto per_flop = [&](const OpShape& s) {
    return (cost.AttentionTime(FORWARD, s) - 1e-6) / AttentionWorkOf(s).executed_flops;
  };
  EXPECT_NEAR(per_flop(wide) * 312e12 * 0.5, 16492.0 / 16384, 1e-9);
  EXPECT_NEAR(per_flop(thin) / per_flop(wide), (16384.0 / 16492) / (256.0 / 364), 1e-9);
  // A CPU calibration (no SMs) has no grid.
  CostConstants cpu = Simple();
  cpu.sms = 0;
  const CostModel flat(kA100, cpu);
  EXPECT_NEAR(flat.AttentionTime(FORWARD, thin) - 1e-6,
              AttentionWorkOf(thin).executed_flops / (312e12 * 0.5), 1e-12);
}

TEST(CostModel, SlidingWindowCostsSTimesW) {
  const CostModel cost(kA100, Simple());
  const double s = 2048;
  for (int w : {512, 1024}) {  // narrower windows turn memory-bound
    // Query i sees min(i + 1, w) keys: s w - w^2 / 2 pairs, against s^2 / 2 for full attention.
    const double ratio = (s * w - w * w / 2.0) / (s * s / 2);
    const double full = cost.AttentionTime(FORWARD, Shape175B(0, true)) - 1e-6;
    EXPECT_NEAR(cost.AttentionTime(FORWARD, Shape175B(w, true)) - 1e-6, ratio * full, 1e-12)
        << "window " << w;
  }
}

TEST(CostModel, UnfusedAttentionWritesTheScoresToHbm) {
  const CostModel cost(kA100, Simple());
  const OpShape fused = Shape175B(0, true), unfused = Shape175B(0, false);
  const AttentionWork w = AttentionWorkOf(unfused);
  // 16 heads per GPU x 2048 x 2048 scores; softmax and dropout stream them.
  EXPECT_DOUBLE_EQ(w.score_elements, 16.0 * 2048 * 2048);
  EXPECT_DOUBLE_EQ(ComputeOpCost(ATTENTION, FORWARD, unfused).bytes -
                       ComputeOpCost(ATTENTION, FORWARD, fused).bytes,
                   w.score_elements * (UnfusedScorePasses(FORWARD, unfused).Bytes() + 4));
  EXPECT_DOUBLE_EQ(UnfusedScorePasses(FORWARD, unfused).Bytes(), 9);  // fused softmax 4, dropout 5
  EXPECT_GT(cost.AttentionTime(FORWARD, unfused),
            cost.MemoryBoundTime(w.score_elements * UnfusedScorePasses(FORWARD, unfused).Bytes()));
  EXPECT_GT(cost.AttentionTime(FORWARD, unfused), cost.AttentionTime(FORWARD, fused));
  EXPECT_GT(cost.AttentionTime(BACKWARD, unfused), cost.AttentionTime(FORWARD, unfused));
}

TEST(CostModel, MegatronsFusedSoftmaxNeedsFourBatchesPerKernel) {
  // 16 heads over TP 8: 2 heads a GPU. A micro-batch of 1 gives 2 score batches, which Megatron's
  // fused kernel (softmax_batch_multiple 4) does not take: PyTorch's fp32 ops run the softmax, 5
  // kernels each way moving 36 bytes a score forward and 40 backward, where the fused kernel is
  // one moving 4 and 6. 2 sequences give 4 batches and the fused kernel.
  OpShape s;
  s.model.set_layers(2);
  s.model.set_hidden(1024);
  s.model.set_heads(16);
  s.model.set_seq_len(1024);
  s.model.set_vocab(50257);
  s.tp = 8;
  s.flash_attention = false;
  s.softmax_batch_multiple = 4;
  s.micro_batch = 1;
  EXPECT_FALSE(FusedSoftmaxApplies(s));
  EXPECT_DOUBLE_EQ(OpKernels(ATTENTION, FORWARD, s), 2 + 5 + 1);
  EXPECT_DOUBLE_EQ(OpKernels(ATTENTION, BACKWARD, s), 4 + 5 + 1);
  EXPECT_DOUBLE_EQ(UnfusedScorePasses(FORWARD, s).Bytes(), 36 + 5);
  EXPECT_DOUBLE_EQ(UnfusedScorePasses(BACKWARD, s).Bytes(), 40 + 5);
  // At the same shape the two paths differ by the softmax alone: its bytes and 4 more kernel ramps.
  const CostModel cost(kA100, Simple());
  const double scores = AttentionWorkOf(s).score_elements;
  const double torch_fwd = cost.AttentionTime(FORWARD, s), torch_bwd = cost.AttentionTime(BACKWARD, s);
  OpShape fused = s;
  fused.softmax_batch_multiple = 1;  // a stack that does not check the batch count
  ASSERT_TRUE(FusedSoftmaxApplies(fused));
  const double ramp = Simple().kernel_overhead_s;
  EXPECT_NEAR(torch_fwd - cost.AttentionTime(FORWARD, fused),
              cost.MemoryBoundTime(36 * scores) - cost.MemoryBoundTime(4 * scores) + 4 * ramp, 1e-12);
  EXPECT_NEAR(torch_bwd - cost.AttentionTime(BACKWARD, fused),
              cost.MemoryBoundTime(40 * scores) - cost.MemoryBoundTime(6 * scores) + 4 * ramp, 1e-12);
  // The fused path as before the rule: the scores' 9 (11) bytes over two kernels.
  EXPECT_DOUBLE_EQ(UnfusedScorePasses(FORWARD, fused).Bytes(), 9);
  EXPECT_DOUBLE_EQ(UnfusedScorePasses(BACKWARD, fused).Bytes(), 11);
  s.micro_batch = 2;
  EXPECT_TRUE(FusedSoftmaxApplies(s));
  EXPECT_DOUBLE_EQ(OpKernels(ATTENTION, FORWARD, s), 2 + 1 + 1);
  EXPECT_DOUBLE_EQ(OpKernels(ATTENTION, BACKWARD, s), 4 + 1 + 1);
  s.tp = 4;
  s.micro_batch = 1;
  EXPECT_TRUE(FusedSoftmaxApplies(s));
  // At 128 keys or fewer the kernel takes twice the batches per block: 4 is not enough there.
  s.model.set_seq_len(128);
  EXPECT_FALSE(FusedSoftmaxApplies(s));
  s.micro_batch = 2;
  EXPECT_TRUE(FusedSoftmaxApplies(s));
  // Keys the kernel never takes, whatever the stack: beyond 4,096, 16 or fewer, not a multiple of 4.
  for (int keys : {8192, 16, 1022}) {
    s.model.set_seq_len(keys);
    s.softmax_batch_multiple = 1;
    EXPECT_FALSE(FusedSoftmaxApplies(s)) << keys;
  }
}

TEST(CostModel, UnfusedElementwiseMakesTwoPasses) {
  const CostModel cost(kA100, Simple());
  OpShape fused = Shape175B(0, true), unfused = fused;
  unfused.fused_elementwise = false;
  const double bytes = ComputeOpCost(GELU, FORWARD, fused).bytes;
  EXPECT_DOUBLE_EQ(ComputeOpCost(GELU, FORWARD, unfused).bytes, 2 * bytes);
  EXPECT_DOUBLE_EQ(cost.OpTime(GELU, FORWARD, unfused), 2 * cost.OpTime(GELU, FORWARD, fused));
}

TEST(CostModel, AnEagerStacksCrossEntropyStreamsItsOps) {
  const CostModel cost(kA100, Simple());
  OpShape fused = Shape175B(0, true), eager = fused;
  eager.launch_s = 50e-6;
  // One GPU's logits: 2,048 tokens x 64,000 / 8 (gpt-175b's vocabulary over TP 8).
  const double logits = 2048.0 * 64000 / 8;
  // Fused: read the bf16 logits, write the fp32 softmax; the backward the same.
  EXPECT_DOUBLE_EQ(ComputeOpCost(CROSS_ENTROPY, FORWARD, fused).bytes, 6 * logits);
  EXPECT_DOUBLE_EQ(ComputeOpCost(CROSS_ENTROPY, BACKWARD, fused).bytes, 6 * logits);
  // Eager: cast, max, subtract, exp, sum, softmax (38 bytes); scale and cast back (14).
  EXPECT_DOUBLE_EQ(ComputeOpCost(CROSS_ENTROPY, FORWARD, eager).bytes, 38 * logits);
  EXPECT_DOUBLE_EQ(ComputeOpCost(CROSS_ENTROPY, BACKWARD, eager).bytes, 14 * logits);
  EXPECT_GT(cost.OpTime(CROSS_ENTROPY, FORWARD, eager), 6 * cost.OpTime(CROSS_ENTROPY, FORWARD, fused));
}

TEST(CostModel, OpTimeOfAGemmSumsItsGemms) {
  const CostModel cost(kA100, Simple());
  const OpShape s = Shape175B(0, true);
  // FFN up, tp 8: [2048 x 12288] x [12288 x 6144]; backward: dX [2048 x 6144]x[6144 x 12288],
  // dW [12288 x 2048]x[2048 x 6144].
  EXPECT_DOUBLE_EQ(cost.OpTime(FFN_UP_GEMM, FORWARD, s), cost.GemmTime(2048, 6144, 12288));
  EXPECT_DOUBLE_EQ(cost.OpTime(FFN_UP_GEMM, BACKWARD, s),
                   cost.GemmTime(2048, 12288, 6144) + cost.GemmTime(12288, 6144, 2048));
  EXPECT_DOUBLE_EQ(cost.OpTime(FFN_UP_GEMM, RECOMPUTE, s), cost.OpTime(FFN_UP_GEMM, FORWARD, s));
}

TEST(CostModel, TpRingBusBandwidthInsideTheNode) {
  CostConstants measured = Simple();
  measured.nccl_protocols = false;  // a measured device: the plain ring at its link
  const CostModel cost(kA100, measured);
  // NVLink 300 GB/s each way at 50% bus efficiency; 0.5 us per ring step.
  const double one_pass = 7 * 0.5e-6 + 7.0 / 8 * 100e6 / (300e9 * 0.5);
  EXPECT_DOUBLE_EQ(cost.TpCollectiveTime(TP_ALL_GATHER, 8, 100e6), one_pass);
  EXPECT_DOUBLE_EQ(cost.TpCollectiveTime(TP_REDUCE_SCATTER, 8, 100e6), one_pass);
  EXPECT_DOUBLE_EQ(cost.TpCollectiveTime(TP_ALL_REDUCE, 8, 100e6), 2 * one_pass);
  EXPECT_EQ(cost.TpCollectiveTime(TP_ALL_REDUCE, 1, 100e6), 0);
}

// A GPU's TP collectives follow NCCL's protocols: a large all-reduce runs Simple at the whole bus
// bandwidth after its latencies (8.4 us + 14 steps x 3.4 us over 8 GPUs), a mid-sized one LL128,
// a small one LL, whose latency is lowest; the time grows with the size and never undercuts the
// bandwidth term of the fastest protocol.
TEST(CostModel, TpCollectivesFollowNcclsProtocolsBySize) {
  const CostModel cost(kA100, Simple());
  const double bus = 300e9 * 0.5;
  const NcclRingCost large = NcclNodeRingTime(TP_ALL_REDUCE, 8, 100e6, bus);
  EXPECT_EQ(large.protocol, NcclProtocol::kSimple);
  EXPECT_DOUBLE_EQ(large.time_s, 1e-6 * (8.4 + 14 * 3.4) + 2 * 7.0 / 8 * 100e6 / bus);
  EXPECT_DOUBLE_EQ(cost.TpCollectiveTime(TP_ALL_REDUCE, 8, 100e6), large.time_s);
  EXPECT_EQ(NcclNodeRingTime(TP_ALL_REDUCE, 8, 2e6, bus).protocol, NcclProtocol::kLL128);
  const NcclRingCost small = NcclNodeRingTime(TP_ALL_REDUCE, 8, 16e3, bus);
  EXPECT_EQ(small.protocol, NcclProtocol::kLL);
  EXPECT_DOUBLE_EQ(small.time_s, 1e-6 * (3.6 + 14 * 0.47) + 4 * 2 * 7.0 / 8 * 16e3 / bus);
  // All-gather: half the steps and volume; LL moves a third of the bandwidth there, not a quarter.
  EXPECT_DOUBLE_EQ(NcclNodeRingTime(TP_ALL_GATHER, 8, 16e3, bus).time_s,
                   1e-6 * (3.6 + 7 * 0.47) + 3 * 7.0 / 8 * 16e3 / bus);
  double last = 0;
  for (double bytes = 1e3; bytes < 1e9; bytes *= 2) {
    const double t = cost.TpCollectiveTime(TP_ALL_REDUCE, 4, bytes);
    EXPECT_GT(t, last) << bytes;
    EXPECT_GE(t, 2 * 3.0 / 4 * bytes / bus) << bytes;
    last = t;
  }
  EXPECT_EQ(NcclNodeRingTime(TP_ALL_REDUCE, 1, 1e6, bus).time_s, 0);
}

TEST(CostModel, DpRingAndP2pFollowPlanProto) {
  const LinkFigures link{25e9, 2e-6};
  EXPECT_DOUBLE_EQ(RingCollectiveTime(DP_REDUCE_SCATTER, 4, 1e9, link),
                   3 * 2e-6 + 0.75e9 / 25e9);
  EXPECT_DOUBLE_EQ(RingCollectiveTime(DP_ALL_REDUCE, 4, 1e9, link),
                   6 * 2e-6 + 1.5e9 / 25e9);
  EXPECT_DOUBLE_EQ(CostModel::P2pTime(1e6, link), 2e-6 + 1e6 / 25e9);
  // NCCL over the NICs: bandwidth x network efficiency, latency + its per-step latency.
  const CostModel cost(kA100, Simple());
  EXPECT_DOUBLE_EQ(cost.DpCollectiveTime(DP_ALL_GATHER, 4, 1e9, link),
                   3 * 3e-6 + 0.75e9 / 12.5e9);
  EXPECT_DOUBLE_EQ(cost.PpTime(1e6, link), 3e-6 + 1e6 / 12.5e9);
}

TEST(CostModel, OptimizerStepStreamsTheStatesAndPaysTheStepOverhead) {
  const CostModel cost(kA100, Simple());
  const double update = 1e-6 + 28.0 * 1e9 / (2039e9 * 0.5);
  EXPECT_DOUBLE_EQ(cost.OptimizerStepTime(1e9, true), update + 0.1);
  // Without data-pipeline overlap every step also waits for its batch.
  EXPECT_DOUBLE_EQ(cost.OptimizerStepTime(1e9, false), update + 0.1 + 0.25);
}

TEST(CostModel, RoutesBetweenNodesAreNicLimited) {
  Result<topology::Cluster> cluster = topology::Cluster::Build(kA100);
  ASSERT_TRUE(cluster.ok()) << cluster.status().message();
  const LinkFigures link = RouteFigures(*cluster, 0, 8);
  // 200 Gbit/s NIC = 25 GB/s; a route crosses at least two network links of 1 us.
  EXPECT_DOUBLE_EQ(link.bandwidth_bytes_per_s, 25e9);
  EXPECT_GE(link.latency_s, 2e-6);
}

TEST(OpCosts, GemmsByHandAndBackwardDoubles) {
  OpShape shape{testing::TinyScenario(1, 1, 1, 1, 1).model(), 2, 4, true};
  const double T = 2 * 256, h = 256;
  const OpCost qkv = ComputeOpCost(QKV_GEMM, FORWARD, shape);
  EXPECT_DOUBLE_EQ(qkv.flops, 2 * T * h * 3 * h / 4);
  EXPECT_DOUBLE_EQ(qkv.bytes, 2 * (T * h + h * 3 * h / 4 + T * 3 * h / 4));
  const OpCost qkv_b = ComputeOpCost(QKV_GEMM, BACKWARD, shape);
  EXPECT_DOUBLE_EQ(qkv_b.flops, 2 * qkv.flops);
  const std::vector<GemmDims> g = OpGemms(QKV_GEMM, BACKWARD, shape);
  ASSERT_EQ(g.size(), 2u);
  double flops = 0;
  for (const GemmDims& d : g) flops += 2 * d.m * d.n * d.k * d.batch;
  EXPECT_DOUBLE_EQ(flops, qkv_b.flops);
  const OpCost attn = ComputeOpCost(ATTENTION, FORWARD, shape);
  EXPECT_DOUBLE_EQ(attn.flops, 4 * T * 256 * h / 4);
  EXPECT_EQ(ComputeOpCost(ATTENTION, RECOMPUTE, shape).flops, attn.flops);
  // With SP, LayerNorm touches a 1/t slice of the sequence: read and write [T/4, h] bf16.
  EXPECT_DOUBLE_EQ(ComputeOpCost(LAYERNORM, FORWARD, shape).bytes, 2 * 2 * T / 4 * h);
  EXPECT_EQ(ComputeOpCost(LAYERNORM, FORWARD, shape).flops, 0);
  EXPECT_DOUBLE_EQ(TpActivationBytes(shape), 2 * T * h);
  EXPECT_DOUBLE_EQ(PpActivationBytes(shape), 2 * T * h / 4);
  // Without SP Megatron's scatter/gather still sends 1/t of the activations per GPU.
  shape.sequence_parallel = false;
  EXPECT_DOUBLE_EQ(PpActivationBytes(shape), 2 * T * h / 4);
}

}  // namespace
}  // namespace megascale
