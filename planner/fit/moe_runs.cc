#include "planner/fit/moe_runs.h"

#include <cmath>
#include <cstdlib>
#include <map>
#include <sstream>
#include <tuple>

#include "planner/cost/metrics.h"
#include "planner/spec/validate.h"

namespace megascale {
namespace {

constexpr double kUnboundedHbmGb = 1e5;

bool Has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

const char* const kColumns[] = {"source", "model", "layers", "hidden", "heads", "kv_heads", "ffn_hidden",
                                "moe_ffn_hidden", "num_experts", "top_k", "shared_experts", "seq_len", "vocab",
                                "gpu", "num_gpus", "tp", "pp", "dp", "cp", "ep", "etp", "vp", "micro_batch",
                                "global_batch", "precision", "recompute", "measured_tokens_per_s_per_gpu",
                                "measured_tflops_per_gpu", "measured_mfu", "measured_step_time_s", "notes"};

// The whole-number cells a rule reads, with their ranges; then the measurements.
Status CheckRow(const CsvRow& r, const std::string& row) {
  for (const char* col : kColumns) {
    if (!r.count(col)) return Status::InvalidInput(row + ": no column \"" + col + "\" (the header must name it)");
  }
  if (r.at("num_experts").empty()) return Status::Ok();  // a dense row: not read here
  for (const char* col : {"layers", "hidden", "heads", "num_experts", "seq_len", "num_gpus", "global_batch"}) {
    MS_ASSIGN_OR_RETURN(const int64_t v, CsvWhole(r, col, row, 1, 1'000'000'000, -1));
    if (v < 0) return Status::InvalidInput(row + ": " + col + " is empty: must be stated (no rule fills it)");
  }
  for (const char* col : {"kv_heads", "ffn_hidden", "moe_ffn_hidden", "top_k", "shared_experts", "vocab", "tp", "pp",
                          "dp", "cp", "ep", "etp", "vp", "micro_batch"}) {
    MS_RETURN_IF_ERROR(CsvWhole(r, col, row, 0, 1'000'000'000).status());
  }
  for (const char* col : {"measured_tokens_per_s_per_gpu", "measured_tflops_per_gpu", "measured_mfu",
                          "measured_step_time_s"}) {
    MS_RETURN_IF_ERROR(CsvNumber(r, col, row, 0).status());
  }
  return Status::Ok();
}

// A cell CheckRow accepted, or `unstated` where it is empty.
int Int(const CsvRow& r, const std::string& col, int unstated = 0) {
  const std::string& v = r.at(col);
  return v.empty() ? unstated : std::atoi(v.c_str());
}
double Num(const CsvRow& r, const std::string& col) {
  const std::string& v = r.at(col);
  return v.empty() ? 0 : std::atof(v.c_str());
}

// "head_dim 128" in the notes, else 0 (hidden / heads).
int NotedInt(const std::string& notes, const std::string& key) {
  const size_t at = notes.find(key);
  return at == std::string::npos ? 0 : std::atoi(notes.c_str() + at + key.size());
}

// Why a row is not predicted, or "" (docs/moe.md, "The reference rows").
std::string SkipReason(const CsvRow& r) {
  if (r.at("precision").rfind("BF16", 0) != 0) return "precision " + r.at("precision") + ": FP8 is not priced yet";
  if (!Has(r.at("gpu"), "H100")) return "gpu " + r.at("gpu") + ": no calibration of that GPU yet";
  if (Int(r, "cp", 1) > 1) return "cp " + r.at("cp") + ": context parallelism is not planned yet";
  return "";
}

// The router as the row's notes describe it. Rules, in order: a "real router" is trained
// (aux-loss, dropless); a capacity factor of 1 drops tokens (Liu et al.'s benchmarks, the
// ModelZoo's token-drop run); "forced" balance, and a row that does not say (vendor benchmark
// tables force-balance, README of the reference), is FORCED_BALANCE.
void SetRouting(const std::string& notes, MoeSpec* e) {
  if (Has(notes, "real router")) {
    e->set_router_balance(AUX_LOSS);
  } else if (Has(notes, "capacity factor 1")) {
    e->set_router_balance(AUX_LOSS);
    e->set_capacity_factor(1);
  } else {
    e->set_router_balance(FORCED_BALANCE);
  }
}

// Rules: SwiGLU experts and MLPs, untied embeddings, no dropout (these models' configs);
// vocab 32,000 where empty (Mixtral's tokenizer; the notes say ~32K); top_k 2 where empty
// (Llama3-8x70B: the upcycling default); the shared experts' FFN from the notes' "shared expert
// intermediate", else moe_ffn_hidden; head_dim from the notes where stated. Layers rounded up to a
// multiple of pp x vp: Megatron gives the first and last stages fewer layers (beside the
// embedding and the head), the planner equal stages; the rounded stage is the longest.
ModelSpec ModelOf(const CsvRow& r, int chunks) {
  ModelSpec m;
  const int layers = Int(r, "layers");
  m.set_layers((layers + chunks - 1) / chunks * chunks);
  m.set_hidden(Int(r, "hidden"));
  m.set_heads(Int(r, "heads"));
  m.set_kv_heads(Int(r, "kv_heads"));
  m.set_ffn_hidden(Int(r, "ffn_hidden", Int(r, "moe_ffn_hidden")));
  m.set_seq_len(Int(r, "seq_len"));
  m.set_vocab(Int(r, "vocab", 32000));
  m.set_gated_mlp(true);
  m.set_tied_embeddings(false);
  m.set_dropout(false);
  const int head_dim = NotedInt(r.at("notes"), "head_dim ");
  if (head_dim > 0) m.set_head_dim(head_dim);
  MoeSpec* e = m.mutable_moe();
  e->set_num_experts(Int(r, "num_experts"));
  e->set_top_k(Int(r, "top_k", 2));
  e->set_moe_ffn_hidden(Int(r, "moe_ffn_hidden"));
  e->set_shared_experts(Int(r, "shared_experts"));
  const int shared = NotedInt(r.at("notes"), "shared expert intermediate ");
  if (e->shared_experts() > 0 && shared > 0) e->set_shared_ffn_hidden(shared / e->shared_experts());
  SetRouting(r.at("notes"), e);
  return m;
}

// Megatron-Core's stack on Eos, 2025: the distributed optimizer (ZeRO 1) with overlapped gradient
// reduce and parameter gather, fused attention and element-wise kernels, SP with TP, no TP
// communication overlap (the MoE recipes leave it off). Recompute: "full" as stated; the selective
// recompute of these rows (LayerNorm, the expert activation) re-runs memory-bound ops only, so
// it is priced as none. Unstated: pp 1, micro-batch 1, dp the rest of the GPUs, etp = tp
// (Megatron-Core before parallel folding gives the experts the attention's TP) except in the
// method "w/ Folding", whose experts take no TP (etp 1).
LayoutSpec LayoutOf(const CsvRow& r) {
  LayoutSpec l;
  l.set_tp(Int(r, "tp", 1));
  l.set_pp(Int(r, "pp", 1));
  const int n = Int(r, "num_gpus");
  l.set_dp(Int(r, "dp", n / (l.tp() * l.pp())));
  l.set_ep(Int(r, "ep", 1));
  l.set_etp(Int(r, "etp", Has(r.at("notes"), "Folding") ? 1 : l.tp()));
  // Unstated interleaving with pp > 1: one layer a chunk, as Megatron-Core's MoE recipes set it
  // (the ModelZoo's Mixtral-8x22B runtime.conf: VPP 7 at PP 8). Plain 1F1B cannot be what ran:
  // Liu et al.'s Mixtral rows scale 6.85x from 128 to 16 micro-batches a replica at PP 8, where
  // 1F1B's bubble allows at most 5.9x.
  const int stage_layers = (Int(r, "layers") + l.pp() - 1) / l.pp();
  const int vp = Int(r, "vp", l.pp() > 1 ? stage_layers : 1);
  l.set_virtual_stages(vp);
  l.set_schedule(vp > 1 ? INTERLEAVED_1F1B : ONE_F_ONE_B);
  l.set_sequence_parallel(l.tp() > 1);
  l.set_recompute(Has(r.at("recompute"), "full") ? RECOMPUTE_FULL : RECOMPUTE_NONE);
  l.set_zero_stage(1);
  l.set_fp32_grads(true);
  l.set_rank_order(TP_DP_PP);
  l.mutable_overlap()->set_dp(true);
  l.mutable_overlap()->set_pp(false);
  l.mutable_overlap()->set_tp(false);
  // The notes name the dispatcher (DeepEP, HybridEP: one copy a node) and the 1F1B all-to-all
  // overlap where it was on; unnamed: Megatron-Core's alltoall, no overlap.
  const std::string& notes = r.at("notes");
  l.set_moe_dispatcher(Has(notes, "DeepEP") || Has(notes, "HybridEP") ? NODE_DEDUP : ALLTOALL);
  l.mutable_overlap()->set_ep(Has(notes, "EP-A2A overlap") || Has(notes, "A2A overlap on"));
  l.mutable_kernels()->set_flash_attention(true);
  l.mutable_kernels()->set_fused_elementwise(true);
  return l;
}

// The step time the row's measurement implies: tokens/s per GPU where printed (the sources'
// own figure), else model TFLOP/s per GPU or MFU through the source's FLOP count: routed top_k
// plus shared experts and the router (Megatron-LM's num_floating_point_operations), with
// attention counted causal in the ModelZoo's 2025 Megatron-LM and full in Liu et al.'s (its
// release of early 2025; the paper does not print its formula). `layers`: the model's own, where
// the scenario's are rounded up to the pipeline (ModelOf).
Result<double> MeasuredSeconds(const CsvRow& r, const Scenario& s, Measure* how) {
  const double n = s.cluster().num_gpus();
  const double tokens = static_cast<double>(s.training().global_batch()) * s.model().seq_len();
  ModelSpec counted = s.model();
  counted.set_layers(Int(r, "layers"));
  const AttentionCount attention = Has(r.at("source"), "ModelZoo") ? AttentionCount::kCausal : AttentionCount::kFull;
  const double flops = ModelFlopsPerStep(counted, s.training().global_batch(), attention);
  *how = Measure::kDerivedTime;
  if (!r.at("measured_step_time_s").empty()) return Num(r, "measured_step_time_s");
  if (!r.at("measured_tokens_per_s_per_gpu").empty()) return tokens / (n * Num(r, "measured_tokens_per_s_per_gpu"));
  *how = Measure::kTflops;
  if (!r.at("measured_tflops_per_gpu").empty()) return flops / (n * Num(r, "measured_tflops_per_gpu") * 1e12);
  if (!r.at("measured_mfu").empty()) return flops / (n * s.cluster().peak_tflops() * 1e12 * Num(r, "measured_mfu"));
  return Status::InvalidInput("no measurement: every measured_* column is empty");
}

Result<PublishedRun> RunOf(const CsvRow& r, const std::string& row) {
  Scenario s;
  s.set_name("moe-reference");
  *s.mutable_cluster() = DgxClusterOf(r);
  LayoutSpec layout = LayoutOf(r);
  *s.mutable_model() = ModelOf(r, layout.pp() * layout.virtual_stages());
  *s.mutable_layout() = layout;
  s.mutable_training()->set_global_batch(Int(r, "global_batch"));
  s.mutable_training()->set_micro_batch(Int(r, "micro_batch", 1));
  // The rows ran, so their steps are predicted whatever the memory model says of them: the memory
  // rule is lifted (hbm_gb only bounds memory), and the test reports the memory estimates apart.
  s.mutable_search()->set_memory_fraction(1.0);
  s.mutable_cluster()->set_hbm_gb(kUnboundedHbmGb);
  Result<Scenario> resolved = ResolveScenario(s);
  if (!resolved.ok()) return Status::InvalidInput(row + ": " + resolved.status().message());
  PublishedRun run;
  run.scenario = *resolved;
  run.source = r.at("source");
  const LayoutSpec& l = run.scenario.layout();
  const MoeSpec& e = run.scenario.model().moe();
  std::ostringstream label, text;
  label << r.at("model").substr(0, r.at("model").find(' ')) << " " << r.at("seq_len") << " @" << r.at("num_gpus");
  text << "tp" << l.tp() << " pp" << l.pp() << " dp" << l.dp() << " ep" << l.ep() << " etp" << l.etp() << " vp"
       << l.virtual_stages() << " mb" << run.scenario.training().micro_batch() << " gb"
       << run.scenario.training().global_batch()
       << (e.router_balance() == FORCED_BALANCE ? " forced" : e.capacity_factor() > 0 ? " cf1" : " routed");
  run.label = label.str();
  run.layout = text.str();
  Result<double> measured = MeasuredSeconds(r, run.scenario, &run.measure);
  if (!measured.ok()) return Status::InvalidInput(row + ": " + measured.status().message());
  run.measured_s = *measured;
  if (!(run.measured_s > 0) || !std::isfinite(run.measured_s)) {
    return Status::InvalidInput(row + ": the measurement gives no finite positive step time");
  }
  return run;
}

// Runs measured with forced balance and with a trained router (dropless), the rest alike: the
// same label and layout text but for its last word, which names the routing (RunOf).
std::vector<MoeRows::Pair> PairsOf(const std::vector<PublishedRun>& runs) {
  auto alike = [](const PublishedRun& r) { return r.label + r.layout.substr(0, r.layout.rfind(' ')); };
  auto routing = [](const PublishedRun& r) -> const MoeSpec& { return r.scenario.model().moe(); };
  std::map<std::string, size_t> forced;
  for (size_t i = 0; i < runs.size(); ++i) {
    if (routing(runs[i]).router_balance() == FORCED_BALANCE) forced[alike(runs[i])] = i;
  }
  std::vector<MoeRows::Pair> pairs;
  for (size_t i = 0; i < runs.size(); ++i) {
    const MoeSpec& e = routing(runs[i]);
    if (e.router_balance() == FORCED_BALANCE || e.capacity_factor() > 0) continue;
    auto it = forced.find(alike(runs[i]));
    if (it != forced.end()) pairs.push_back({it->second, i});
  }
  return pairs;
}

}  // namespace

Result<MoeRows> MoeReferenceRuns(const std::vector<CsvRow>& rows, const std::string& what) {
  MoeRows out;
  for (size_t i = 0; i < rows.size(); ++i) {
    const std::string row = CsvRowName(what, i, rows[i]);
    MS_RETURN_IF_ERROR(CheckRow(rows[i], row));
    if (rows[i].at("num_experts").empty()) continue;
    const std::string skip = SkipReason(rows[i]);
    if (!skip.empty()) {
      out.skipped.push_back(row + ": " + skip);
      continue;
    }
    MS_ASSIGN_OR_RETURN(PublishedRun run, RunOf(rows[i], row));
    out.runs.push_back(std::move(run));
  }
  out.pairs = PairsOf(out.runs);
  return out;
}

}  // namespace megascale
