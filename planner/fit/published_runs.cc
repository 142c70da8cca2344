#include "planner/fit/published_runs.h"

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <sstream>

#include "planner/cost/memory.h"
#include "planner/cost/metrics.h"
#include "planner/fit/vtrain_runs.h"
#include "planner/spec/schedule.h"
#include "planner/spec/validate.h"

namespace megascale {
namespace {

bool Has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// Every column there, every numeric cell a number in its range (tp, pp, dp, vp at most the GPUs),
// a measurement > 0 and finite, so that the rules below read cells (Int, Num) without failing and
// their products stay within int64.
Status CheckRow(const CsvRow& r, const std::string& row) {
  for (const std::string& col : PublishedRunColumns()) {
    if (!r.count(col)) return Status::InvalidInput(row + ": no column \"" + col + "\" (the header must name it)");
  }
  MS_ASSIGN_OR_RETURN(const int64_t gpus, CsvWhole(r, "num_gpus", row, 1, 10'000'000, -1));
  if (gpus < 0) return Status::InvalidInput(row + ": num_gpus is empty: must be stated (no rule fills it)");
  for (const char* col : {"layers", "hidden", "global_batch"}) {
    MS_ASSIGN_OR_RETURN(const int64_t v, CsvWhole(r, col, row, 1, 1'000'000'000, -1));
    if (v < 0) return Status::InvalidInput(row + ": " + col + " is empty: must be stated (no rule fills it)");
  }
  for (const char* col : {"heads", "kv_heads", "ffn", "seq_len", "vocab", "micro_batch"}) {
    MS_RETURN_IF_ERROR(CsvWhole(r, col, row, 0, 1'000'000'000).status());
  }
  for (const char* col : {"tp", "pp", "dp", "vp"}) MS_RETURN_IF_ERROR(CsvWhole(r, col, row, 0, gpus).status());
  for (const char* col : {"measured_tflops_per_gpu", "measured_mfu", "measured_iter_time_s"}) {
    MS_RETURN_IF_ERROR(CsvNumber(r, col, row, 0).status());
  }
  // The cluster rules know DGX A100 and DGX H100 nodes (ClusterOf).
  if (!Has(r.at("gpu"), "A100") && !Has(r.at("gpu"), "H100")) {
    return Status::InvalidInput(row + ": gpu = \"" + r.at("gpu") + "\": must name an A100 or an H100 (the rules " +
                                "build DGX A100 and DGX H100 clusters)");
  }
  return Status::Ok();
}

// `s` with `row` before its message (the row a rule or the scenario's validation failed on).
Status InRow(const std::string& row, const Status& s) {
  return s.ok() ? s : Status::InvalidInput(row + ": " + s.message());
}

// A cell CheckRow accepted (a decimal integer in int's range), or 0 where it is empty.
int Int(const CsvRow& r, const std::string& col) {
  const std::string& v = r.at(col);
  return v.empty() ? 0 : std::atoi(v.c_str());
}
// A measurement CheckRow accepted, or 0 where it is empty.
double Num(const CsvRow& r, const std::string& col) {
  const std::string& v = r.at(col);
  return v.empty() ? 0 : std::atof(v.c_str());
}

// The software stack a source ran, from its public description (docs/calibration.md):
//  * Narayanan et al. 2021, PTD-P: Megatron-LM of 2021: full recompute (their eq. 3 counts it),
//    plain DP all-reduce after the backward (ZeRO 0, not overlapped), blocking paired PP
//    send/recv, the fused softmax kernel (no FlashAttention: scores in HBM), fused element-wise
//    kernels (bias-GeLU, bias-dropout-add, LayerNorm), no sequence parallelism.
//  * Narayanan et al. 2021, ZeRO-3 rows: DeepSpeed ZeRO stage 3 (parameters gathered per layer,
//    prefetched), same kernels and recompute.
//  * Megatron-LM README (Megatron-Core r0.8, 2024): the flags in the notes, --overlap-grad-reduce
//    --overlap-param-gather (distributed optimizer = ZeRO 1, overlapped), --tp-comm-overlap (TP
//    overlap, which requires SP); TransformerEngine's fused attention; no recompute stated.
struct Stack {
  bool megatron_2021 = false;
  bool zero3 = false;
};

Stack StackOf(const CsvRow& r) {
  Stack s;
  s.megatron_2021 = Has(r.at("source"), "Narayanan");
  s.zero3 = Has(r.at("model"), "ZeRO-3");
  return s;
}

// Interleaving rule, the same for every row: where the source does not state the virtual stages,
// 1F1B (vp 1). None of the rows states v; Narayanan's notes say interleaving was used without v.
// Against the calibration fitted this way, the alternatives predict worse (docs/calibration.md):
// two chunks wherever the stage's layers are even (MAPE 4.9%), MegaScale-style chunks of two layers
// (or one where odd) (5.7%).
int VirtualStagesRule() { return 1; }

ModelSpec ModelOf(const CsvRow& r) {
  ModelSpec m;
  m.set_layers(Int(r, "layers"));
  m.set_hidden(Int(r, "hidden"));
  m.set_heads(Int(r, "heads"));
  m.set_kv_heads(Int(r, "kv_heads"));
  m.set_ffn_hidden(Int(r, "ffn"));  // empty: 4 x hidden
  m.set_seq_len(Int(r, "seq_len"));
  m.set_vocab(Int(r, "vocab"));
  return m;
}

// Fills everything but tp/pp/dp/vp.
LayoutSpec StackLayout(const CsvRow& r, const Stack& st) {
  LayoutSpec l;
  const std::string rc = r.at("recompute");
  // Narayanan's TFLOP/s use eq. 3, which counts recompute: their runs recomputed.
  l.set_recompute(st.megatron_2021 || Has(rc, "full") ? RECOMPUTE_FULL : RECOMPUTE_NONE);
  l.set_zero_stage(st.zero3 ? 3 : (st.megatron_2021 ? 0 : 1));
  // DeepSpeed's ZeRO keeps 16-bit gradients; Megatron-LM an fp32 buffer.
  l.set_fp32_grads(!st.zero3);
  l.set_rank_order(TP_DP_PP);
  l.mutable_overlap()->set_dp(!st.megatron_2021 || st.zero3);
  l.mutable_overlap()->set_pp(false);
  l.mutable_overlap()->set_tp(!st.megatron_2021);
  l.mutable_kernels()->set_flash_attention(!st.megatron_2021);
  l.mutable_kernels()->set_fused_elementwise(true);
  return l;
}

std::string Key(const CsvRow& r) {
  return r.at("gpu").substr(0, 4) + "/" + r.at("layers") + "/" + r.at("hidden");
}

// Smallest PP (dividing the layers, TP x PP dividing the GPUs, DP dividing the batch) whose
// stages all fit the memory rule; 0 if none.
int SmallestFittingPp(const Scenario& base, int tp) {
  const ModelSpec& m = base.model();
  const int n = base.cluster().num_gpus();
  for (int pp = 1; pp <= m.layers() && int64_t{tp} * pp <= n; ++pp) {
    if (m.layers() % pp != 0 || n % (tp * pp) != 0) continue;
    const int dp = n / (tp * pp);
    if (base.training().global_batch() % (static_cast<int64_t>(dp) * base.training().micro_batch()))
      continue;
    LayoutSpec l = base.layout();
    l.set_tp(tp);
    l.set_pp(pp);
    l.set_dp(dp);
    l.set_virtual_stages(1);
    const int64_t mb = base.training().global_batch() / (dp * base.training().micro_batch());
    Scenario probe = base;
    *probe.mutable_layout() = l;
    const double bytes = MostStageMemoryBytes(m, l, base.training().micro_batch(), static_cast<int>(mb));
    if (CheckMemoryFits(probe, bytes).ok()) return pp;  // the rule BuildPlan applies
  }
  return 0;
}

Result<double> MeasuredSeconds(const CsvRow& r, const Scenario& s, Measure* how) {
  const std::string& notes = r.at("notes");
  const size_t at = notes.find("derived_iter_time_s=");
  const double n = s.cluster().num_gpus();
  if (at != std::string::npos) {
    *how = Measure::kDerivedTime;
    return std::atof(notes.c_str() + at + std::string("derived_iter_time_s=").size());
  }
  if (!r.at("measured_iter_time_s").empty()) {
    *how = Measure::kDerivedTime;
    return Num(r, "measured_iter_time_s");
  }
  const int64_t batch = s.training().global_batch();
  if (!r.at("measured_tflops_per_gpu").empty()) {
    *how = Measure::kTflops;
    // Narayanan's eq. 3 counts recompute (hardware FLOPs); the Megatron README counts model FLOPs.
    const double flops = StackOf(r).megatron_2021
                             ? HardwareFlopsPerStep(s.model(), batch, RECOMPUTE_FULL)
                             : ModelFlopsPerStep(s.model(), batch);
    return flops / (n * Num(r, "measured_tflops_per_gpu") * 1e12);
  }
  if (!r.at("measured_mfu").empty()) {
    *how = Measure::kMfuEndpoint;
    return ModelFlopsPerStep(s.model(), batch) /
           (n * s.cluster().peak_tflops() * 1e12 * Num(r, "measured_mfu"));
  }
  return Status::InvalidInput("no measurement: measured_iter_time_s, measured_tflops_per_gpu and measured_mfu are all empty");
}

}  // namespace

std::string CsvRowName(const std::string& what, size_t i, const CsvRow& r) {
  auto model = r.find("model");
  return what + " row " + std::to_string(i + 1) + (model != r.end() && !model->second.empty() ? " (" + model->second + ")" : "");
}

ClusterSpec DgxClusterOf(const CsvRow& r) {
  ClusterSpec c;
  const bool h100 = Has(r.at("gpu"), "H100");
  c.set_gpu(h100 ? "H100" : "A100");
  c.set_num_gpus(Int(r, "num_gpus"));
  c.set_gpus_per_node(8);
  // DGX A100 (Selene): 8 x HDR 200 Gb/s; DGX H100 (Eos): 8 x NDR 400 Gb/s; rail-optimized.
  c.set_fabric(RAIL_CLOS);
  c.set_nic_gbps(h100 ? 400 : 200);
  c.set_switch_port_gbps(h100 ? 400 : 200);
  c.set_split_tor_ports(false);
  c.set_nodes_per_tor(32);
  return c;
}

const std::vector<std::string>& PublishedRunColumns() {
  static const std::vector<std::string> kColumns = {
      "source", "model", "layers", "hidden", "heads", "kv_heads", "ffn", "seq_len", "vocab", "gpu", "num_gpus",
      "tp", "pp", "dp", "vp", "micro_batch", "global_batch", "recompute", "seq_parallel",
      "measured_tflops_per_gpu", "measured_mfu", "measured_iter_time_s", "notes"};
  return kColumns;
}

namespace {

// Rows without TP/PP take them from a row of the same model, GPU type and stack that states them
// (or states DP: PP = n / (8 x DP)) and whose TP x PP divides this row's GPUs: the splits stated,
// by that key.
using StatedSplits = std::map<std::string, std::vector<std::pair<int, int>>>;

std::string SplitKey(const CsvRow& r) { return Key(r) + (StackOf(r).zero3 ? "/zero3" : ""); }

StatedSplits SplitsStated(const std::vector<CsvRow>& rows) {
  StatedSplits stated;
  for (const CsvRow& r : rows) {
    const int tp = Int(r, "tp") > 0 ? Int(r, "tp") : 8;
    if (Int(r, "pp") > 0) {
      stated[SplitKey(r)].push_back({tp, Int(r, "pp")});
    } else if (Int(r, "dp") > 0) {
      const int64_t pp = Int(r, "num_gpus") / (int64_t{tp} * Int(r, "dp"));
      if (pp >= 1) stated[SplitKey(r)].push_back({tp, static_cast<int>(pp)});
    }
  }
  return stated;
}

// The row's (tp, pp). Rule: TP 8 (one node) where not stated; PP as stated, else n / (TP x DP)
// where DP is stated, else the same model's stated split, else the smallest PP that fits in memory.
Result<std::pair<int, int>> SplitOf(const CsvRow& r, const Scenario& s, const StatedSplits& stated,
                                    const std::string& row) {
  const int n = Int(r, "num_gpus");
  int tp = Int(r, "tp") > 0 ? Int(r, "tp") : 8;
  int pp = Int(r, "pp");
  if (Int(r, "dp") > 0 && n % (int64_t{tp} * Int(r, "dp")) != 0) {
    return Status::InvalidInput(row + ": tp " + std::to_string(tp) + " x dp " + std::to_string(Int(r, "dp")) +
                                " must divide num_gpus " + std::to_string(n));
  }
  if (pp == 0 && Int(r, "dp") > 0) pp = static_cast<int>(n / (int64_t{tp} * Int(r, "dp")));
  if (pp == 0) {
    auto it = stated.find(SplitKey(r));
    for (const auto& [t, p] : it != stated.end() ? it->second : std::vector<std::pair<int, int>>{}) {
      if (n % (int64_t{t} * p) == 0) {
        tp = t;
        pp = p;
        break;
      }
    }
  }
  if (pp == 0) {
    Scenario probe = s;
    probe.mutable_layout()->set_tp(tp);
    probe.mutable_layout()->set_pp(1);
    probe.mutable_layout()->set_dp(n / tp);
    probe.mutable_training()->set_global_batch(n / tp);
    Result<Scenario> resolved_or = ResolveScenario(probe);  // SmallestFittingPp's REQUIRES
    if (!resolved_or.ok()) return InRow(row, resolved_or.status());
    Scenario resolved_probe = *resolved_or;
    resolved_probe.mutable_training()->set_global_batch(Int(r, "global_batch"));
    pp = SmallestFittingPp(resolved_probe, tp);
    if (pp == 0) return Status::InvalidInput(row + ": pp is unstated and no PP dividing the layers fits the memory rule");
  }
  if (tp <= 0 || pp <= 0 || n % (int64_t{tp} * pp) != 0) {
    return Status::InvalidInput(row + ": tp " + std::to_string(tp) + " x pp " + std::to_string(pp) +
                                " must divide num_gpus " + std::to_string(n));
  }
  return std::make_pair(tp, pp);
}

// One row as a run: its scenario by the rules above, resolved, and what it measured.
Result<PublishedRun> RunOf(const CsvRow& r, const StatedSplits& stated, const std::string& row) {
  const Stack st = StackOf(r);
  Scenario s;
  s.set_name("calibration");
  *s.mutable_cluster() = DgxClusterOf(r);
  *s.mutable_model() = ModelOf(r);
  s.mutable_training()->set_global_batch(Int(r, "global_batch"));
  // Rule: micro-batch 1 where the source does not state it.
  s.mutable_training()->set_micro_batch(Int(r, "micro_batch") > 0 ? Int(r, "micro_batch") : 1);
  *s.mutable_layout() = StackLayout(r, st);
  const int n = Int(r, "num_gpus");
  MS_ASSIGN_OR_RETURN(const auto split, SplitOf(r, s, stated, row));
  const auto [tp, pp] = split;
  const int dp = static_cast<int>(n / (int64_t{tp} * pp));
  LayoutSpec& l = *s.mutable_layout();
  l.set_tp(tp);
  l.set_pp(pp);
  l.set_dp(dp);
  // Sequence parallelism as stated; Megatron-Core's TP overlap needs it.
  l.set_sequence_parallel(r.at("seq_parallel") == "no" ? false : tp > 1);
  const int64_t microbatches = s.training().global_batch() / (int64_t{dp} * s.training().micro_batch());
  const int vp = Int(r, "vp") > 0 ? Int(r, "vp") : VirtualStagesRule();
  l.set_virtual_stages(vp);
  l.set_schedule(vp > 1 ? INTERLEAVED_1F1B : ONE_F_ONE_B);
  Result<Scenario> resolved_or = ResolveScenario(s);
  if (!resolved_or.ok()) return InRow(row, resolved_or.status());
  const Scenario& resolved = *resolved_or;

  PublishedRun run;
  std::ostringstream label, layout;
  label << r.at("model").substr(0, r.at("model").find(' ')) << (st.zero3 ? " ZeRO-3" : "")
        << " @" << n << " " << resolved.cluster().gpu();
  layout << "tp" << tp << " pp" << pp << " dp" << dp << " vp" << vp << " mb"
         << resolved.training().micro_batch() << " z" << l.zero_stage()
         << (l.recompute() == RECOMPUTE_FULL ? " rc" : "");
  run.label = label.str();
  run.source = r.at("source");
  run.layout = layout.str();
  run.scenario = resolved;
  Result<double> measured = MeasuredSeconds(r, resolved, &run.measure);
  if (!measured.ok()) return InRow(row, measured.status());
  run.measured_s = *measured;
  if (!(run.measured_s > 0) || !std::isfinite(run.measured_s)) {
    return Status::InvalidInput(row + ": the measurement gives no finite positive iteration time");
  }
  run.in_mape = run.measure != Measure::kMfuEndpoint;
  run.fit_row = run.in_mape && microbatches * s.model().layers() <= 30000;
  return run;
}

}  // namespace

Result<std::vector<PublishedRun>> PublishedRuns(const std::vector<CsvRow>& rows, const std::string& what) {
  for (size_t i = 0; i < rows.size(); ++i) MS_RETURN_IF_ERROR(CheckRow(rows[i], CsvRowName(what, i, rows[i])));
  const StatedSplits stated = SplitsStated(rows);
  std::vector<PublishedRun> runs;
  for (size_t i = 0; i < rows.size(); ++i) {
    MS_ASSIGN_OR_RETURN(PublishedRun run, RunOf(rows[i], stated, CsvRowName(what, i, rows[i])));
    runs.push_back(std::move(run));
  }
  return runs;
}

Result<std::vector<PublishedRun>> ReadPublishedRunFile(const std::string& path) {
  MS_ASSIGN_OR_RETURN(const std::vector<CsvRow> rows, ReadCsvFile(path));
  if (rows.empty()) return Status::InvalidInput(path + ": no rows under its header line");
  const bool vtrain = std::filesystem::path(path).filename() == kVtrainFileName;
  return vtrain ? VtrainRuns(rows, path) : PublishedRuns(rows, path);
}

}  // namespace megascale
