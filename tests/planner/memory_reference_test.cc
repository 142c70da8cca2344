// The memory model against every published measured peak of ../shared/reference/
// measured-memory.csv (the repository's copy, tests/planner/data/measured-memory.csv, on a clean
// clone): prints predicted and measured max-allocated memory per row, and checks how close they are
// and that no run that really trained is rejected by the fit rule. docs/memory.md has the table.
#include <cmath>
#include <cstdio>

#include <gtest/gtest.h>

#include "base/csv.h"
#include "planner/cost/memory.h"
#include "planner/spec/schedule.h"
#include "tests/planner/reference_files.h"

namespace megascale {
namespace {

const char kCsvFile[] = "measured-memory.csv";

int Int(const CsvRow& r, const char* col) { return std::atoi(r.at(col).c_str()); }
bool Bool(const CsvRow& r, const char* col) { return r.at(col) == "true"; }

struct Row {
  std::string label;
  ModelSpec model;
  LayoutSpec layout;
  int micro_batch = 1, microbatches = 1, stage = 0;
  double measured_bytes = 0;
  double gpu_bytes = 0;  // 0: the source does not say
  bool deepspeed = false;
};

Row RowOf(const CsvRow& r) {
  Row row;
  ModelSpec& m = row.model;
  m.set_layers(Int(r, "layers"));
  m.set_hidden(Int(r, "hidden"));
  m.set_heads(Int(r, "heads"));
  m.set_kv_heads(Int(r, "kv_heads"));
  m.set_ffn_hidden(Int(r, "ffn"));
  m.set_gated_mlp(Bool(r, "gated_mlp"));
  m.set_tied_embeddings(Bool(r, "tied_embeddings"));
  m.set_dropout(Bool(r, "dropout"));
  m.set_vocab(Int(r, "vocab"));
  m.set_seq_len(Int(r, "seq_len"));
  LayoutSpec& l = row.layout;
  l.set_tp(Int(r, "tp"));
  l.set_pp(Int(r, "pp"));
  l.set_dp(Int(r, "dp"));
  l.set_virtual_stages(Int(r, "vp"));
  l.set_sequence_parallel(Bool(r, "sequence_parallel"));
  l.set_zero_stage(Int(r, "zero_stage"));
  l.set_fp32_grads(Bool(r, "fp32_grads"));
  l.mutable_kernels()->set_flash_attention(Bool(r, "flash_attention"));
  const std::string rc = r.at("recompute");
  l.set_recompute(rc == "full" ? RECOMPUTE_FULL : rc == "selective" ? RECOMPUTE_SELECTIVE : RECOMPUTE_NONE);
  row.micro_batch = Int(r, "micro_batch");
  row.microbatches = Int(r, "global_batch") / (row.micro_batch * l.dp());
  row.stage = Int(r, "stage");
  row.measured_bytes = std::atof(r.at("max_allocated_mib").c_str()) * 1024 * 1024;  // Megatron's "MB"
  row.gpu_bytes = std::atof(r.at("gpu_memory_gb").c_str()) * 1e9;
  row.deepspeed = r.at("source").find("Megatron-DeepSpeed") != std::string::npos;
  row.label = r.at("model") + " tp" + r.at("tp") + " pp" + r.at("pp") + " dp" + r.at("dp") + " mb" +
              r.at("micro_batch") + " " + rc + " stage " + r.at("stage");
  return row;
}

std::vector<Row> LoadRows() {
  const std::string path = testing::ReferencePath(kCsvFile);
  std::vector<Row> out;
  if (path.empty()) return out;
  Result<std::vector<CsvRow>> rows = ReadCsvFile(path);
  EXPECT_TRUE(rows.ok()) << rows.status().message();
  if (rows.ok()) {
    for (const CsvRow& r : *rows) out.push_back(RowOf(r));
  }
  return out;
}

double Predicted(const Row& r) {
  const int vp = std::max(1, r.layout.virtual_stages());
  const auto units = StageSchedule(r.stage, r.layout.pp(), vp, r.microbatches);
  return StageMemory(r.model, r.layout, r.micro_batch, r.stage, MaxInFlightUnits(units)).total();
}

TEST(MemoryReference, PredictsEveryPublishedPeak) {
  const std::vector<Row> rows = LoadRows();
  if (rows.empty()) GTEST_SKIP() << "no measured-memory.csv beside the clone nor in tests/planner/data";
  double sum = 0, sum_megatron = 0, worst_megatron = 0;
  int megatron = 0;
  std::printf("%-58s %10s %10s %8s\n", "run (stage printed)", "predicted", "measured", "error");
  for (const Row& r : rows) {
    const double predicted = Predicted(r);
    const double error = predicted / r.measured_bytes - 1;
    std::printf("%-58s %8.2f G %8.2f G %+7.1f%%%s\n", r.label.c_str(), predicted / (1 << 30),
                r.measured_bytes / (1 << 30), 100 * error, r.deepspeed ? "  (DeepSpeed)" : "");
    sum += std::fabs(error);
    if (!r.deepspeed) {
      sum_megatron += std::fabs(error);
      worst_megatron = std::max(worst_megatron, std::fabs(error));
      ++megatron;
    }
  }
  const double mape = sum / rows.size(), mape_megatron = sum_megatron / megatron;
  std::printf("MAPE %.1f%% over %zu rows; Megatron-LM rows %.1f%% (worst %.1f%%) over %d\n", 100 * mape,
              rows.size(), 100 * mape_megatron, 100 * worst_megatron, megatron);
  // Regression guards at this model's measured accuracy (docs/memory.md); the target is
  // every row within 10 %: two Megatron-LM rows (10.2 %, 12.4 %) and both DeepSpeed rows miss it.
  EXPECT_LT(mape_megatron, 0.06);
  EXPECT_LT(worst_megatron, 0.13);
  EXPECT_LT(mape, 0.10);
}

TEST(MemoryReference, NoRunThatTrainedIsRejected) {
  const std::vector<Row> rows = LoadRows();
  if (rows.empty()) GTEST_SKIP() << "no measured-memory.csv";
  for (const Row& r : rows) {
    if (r.gpu_bytes <= 0) continue;
    Scenario s;
    s.mutable_cluster()->set_hbm_gb(r.gpu_bytes / 1e9);
    s.mutable_search()->set_memory_fraction(0.9);
    EXPECT_TRUE(CheckMemoryFits(s, Predicted(r)).ok()) << r.label << ": " << Predicted(r) / 1e9 << " GB";
  }
}

TEST(MemoryReference, TheRuleNamesTheFigures) {
  Scenario s;
  s.mutable_cluster()->set_hbm_gb(80);
  s.mutable_search()->set_memory_fraction(0.9);
  EXPECT_TRUE(CheckMemoryFits(s, 71.9e9).ok());
  const Status st = CheckMemoryFits(s, 95.04e9);
  ASSERT_FALSE(st.ok());
  ASSERT_NE(st.field_error(), nullptr);
  EXPECT_EQ(st.field_error()->field, "layout");
  EXPECT_EQ(st.field_error()->value, "95.0 GB per GPU");
  EXPECT_NE(st.field_error()->rule.find("cluster.hbm_gb x search.memory_fraction (72.0 GB)"), std::string::npos);
}

}  // namespace
}  // namespace megascale
