// Imports: our Chrome export read back into the same trace; Megatron timer CSV mapped to events;
// per-rank end order restored; format detection; errors that name the input.
#include "traces/import/trace_import.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <tuple>

#include "base/atomic_file.h"
#include "tests/traces/trace_builders.h"
#include "traces/analysis/diagnose_input.h"
#include "traces/format/end_order_sink.h"
#include "traces/report/chrome_export.h"

namespace megascale {
namespace {

using namespace testing_traces;

// tp 2, pp 2, dp 1: a few ops per rank with every field the export writes, in end order per rank.
std::vector<TraceEvent> RichEvents() {
  std::vector<TraceEvent> ev;
  for (int rank = 0; rank < 4; ++rank) {
    TraceEvent gemm = Ev(rank, 0, FFN_UP_GEMM, COMPUTE, 1000 + rank, 2500500 + 7 * rank);
    gemm.set_phase(BACKWARD);
    gemm.set_microbatch(3);
    gemm.set_layer(12);
    gemm.set_chunk(1);
    gemm.set_op_id(77);
    gemm.set_flops(2e12);
    gemm.set_bytes(1e6);
    gemm.set_stage(rank / 2);
    ev.push_back(gemm);
    TraceEvent ar = Ev(rank, 0, DP_ALL_REDUCE, DP_COMM, 2000000, 3000001);
    ar.set_group(DP_GROUP);
    ar.set_collective_seq(5);
    ar.set_op_id(78);
    ar.set_stage(rank / 2);
    ev.push_back(ar);
    TraceEvent opt = Ev(rank, 1, OPTIMIZER_STEP, COMPUTE, 3000001, 3100000);
    opt.set_phase(OPTIMIZER);
    opt.set_op_id(79);
    opt.set_stage(rank / 2);
    ev.push_back(opt);
  }
  return ev;
}

TEST(ChromeImport, ReadsOurExportBackIntoTheSameTrace) {
  const std::string trace = TempPath("rt.trace"), json = TempPath("rt.json");
  TraceHeader header = Header(2, 2, 1);
  header.set_peak_flops_per_gpu(312e12);
  header.set_model_flops_per_step(1e15);
  header.set_tokens_per_step(8192);
  header.set_virtual_stages(2);
  RankStatus timeout;
  timeout.set_rank(1);
  timeout.set_kind(RankStatus::OP_TIMEOUT);
  timeout.set_time_ns(7500);
  timeout.set_step(1);
  timeout.set_op_id(78);
  timeout.set_detail("DP_ALL_REDUCE posted at 0.002 s");
  RunEnd end;
  end.set_steps_completed(1);
  end.set_failed(true);
  end.set_end_ns(4000000);
  WriteTraceFile(trace, header, RichEvents(), {timeout}, &end);
  ASSERT_TRUE(ExportChromeTrace(trace, json).ok());

  CollectSink got;
  Result<ImportStats> stats = ImportChromeTrace(json, &got);
  ASSERT_TRUE(stats.ok()) << stats.status().message();
  EXPECT_EQ(stats->events, 12);
  EXPECT_EQ(stats->statuses, 1);
  EXPECT_EQ(stats->skipped, 0);
  EXPECT_EQ(stats->out_of_order, 0);
  EXPECT_EQ(got.header.SerializeAsString(), header.SerializeAsString());
  ASSERT_TRUE(got.has_end);
  EXPECT_EQ(got.end.steps_completed(), 1);
  EXPECT_TRUE(got.end.failed());
  EXPECT_EQ(got.end.end_ns(), 4000000);
  ASSERT_EQ(got.statuses.size(), 1u);
  EXPECT_EQ(got.statuses[0].op_id(), 78u);
  EXPECT_EQ(got.statuses[0].time_ns(), 7500);
  EXPECT_EQ(got.statuses[0].detail(), timeout.detail());

  // Same events, each rank's in the same (end) order; ranks may interleave differently.
  std::vector<TraceEvent> want = RichEvents();
  auto by_rank = [](const TraceEvent& a, const TraceEvent& b) { return a.rank() < b.rank(); };
  std::stable_sort(want.begin(), want.end(), by_rank);
  std::stable_sort(got.events.begin(), got.events.end(), by_rank);
  ASSERT_EQ(got.events.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    const TraceEvent& g = got.events[i];
    const TraceEvent& w = want[i];
    // Field by field: the JSON writes every field, so the import sets some the original left at
    // their defaults (same values, different presence bits).
    EXPECT_EQ(std::make_tuple(g.rank(), g.step(), g.op_id(), g.kind(), g.lane(), g.phase(), g.group()),
              std::make_tuple(w.rank(), w.step(), w.op_id(), w.kind(), w.lane(), w.phase(), w.group()))
        << i;
    EXPECT_EQ(std::make_tuple(g.start_ns(), g.end_ns(), g.collective_seq(), g.microbatch(), g.chunk(),
                              g.layer(), g.stage()),
              std::make_tuple(w.start_ns(), w.end_ns(), w.collective_seq(), w.microbatch(), w.chunk(),
                              w.layer(), w.stage()))
        << i;
    EXPECT_EQ(g.flops(), w.flops());
    EXPECT_EQ(g.bytes(), w.bytes());
  }
  std::remove(trace.c_str());
  std::remove(json.c_str());
}

TEST(ChromeImport, AForeignTraceWithoutHeaderTakesItsLayoutFromTheProcessNames) {
  const std::string json = TempPath("foreign.json");
  const std::string text = R"js([
    {"name":"QKV_GEMM fwd mb0","ph":"X","ts":1.5,"dur":2,"pid":3,"tid":0,"args":{"step":0}},
    {"name":"python gc","ph":"X","ts":0,"dur":1,"pid":0,"tid":7},
    {"name":"process_name","ph":"M","pid":3,"args":{"name":"rank 3 (tp 1, dp 0, pp 1)"}}
  ])js";
  ASSERT_TRUE(WriteFileAtomically(json, text).ok());
  CollectSink got;
  Result<ImportStats> stats = ImportChromeTrace(json, &got);
  ASSERT_TRUE(stats.ok()) << stats.status().message();
  EXPECT_EQ(stats->events, 1);
  EXPECT_EQ(stats->skipped, 1);  // "python gc" names no op kind
  EXPECT_EQ(got.header.world_size(), 4);
  EXPECT_EQ(got.header.tp(), 2);
  EXPECT_EQ(got.header.pp(), 2);
  EXPECT_EQ(got.header.dp(), 1);
  ASSERT_EQ(got.events.size(), 1u);
  EXPECT_EQ(got.events[0].start_ns(), 1500);
  EXPECT_EQ(got.events[0].end_ns(), 3500);
  EXPECT_EQ(got.events[0].microbatch(), -1);  // no args: the proto defaults
  std::remove(json.c_str());
}

TEST(ChromeImport, InvalidJsonNamesThePath) {
  const std::string json = TempPath("bad.json");
  ASSERT_TRUE(WriteFileAtomically(json, "{\"traceEvents\": [ {\"ph\": \"X\", ").ok());
  CollectSink got;
  Result<ImportStats> stats = ImportChromeTrace(json, &got);
  ASSERT_FALSE(stats.ok());
  EXPECT_EQ(stats.status().code(), Status::Code::kInvalidInput);
  EXPECT_NE(stats.status().message().find(json), std::string::npos);
  std::remove(json.c_str());
}

// A Chrome trace distrusted: each field out of its range is refused naming the element,
// the field, the value and the rule; a file with no trace event is no trace.
TEST(ChromeImport, HostileElementsAreRefusedByIndexAndField) {
  const std::string path = TempPath("hostile.json");
  const std::string x = R"({"ph":"X","name":"FFN_UP_GEMM fwd","pid":0,"tid":0,"ts":0,"dur":1,"args":{"step":0}})";
  const std::pair<std::string, std::string> cases[] = {
      {R"({"traceEvents":[)" + x + R"(,{"ph":"X","name":"FFN_UP_GEMM fwd","pid":2147483647,"ts":0,"dur":1}]})",
       "traceEvents[1].pid = 2147483647: must be between 0 and 1048575"},
      {R"({"traceEvents":[{"ph":"X","name":"FFN_UP_GEMM fwd","pid":0,"ts":5,"dur":-3}]})",
       "traceEvents[0].dur = -3: must be between 0"},
      {R"({"traceEvents":[{"ph":"X","name":"FFN_UP_GEMM fwd","pid":0,"ts":1e300,"dur":1}]})",
       "traceEvents[0].ts = 1e+300: must be within"},
      {R"({"traceEvents":[{"ph":"X","name":"FFN_UP_GEMM fwd","pid":0.5,"ts":0,"dur":1}]})",
       "traceEvents[0].pid = 0.5: must be an integer"},
      {R"({"traceEvents":[{"ph":"X","name":"FFN_UP_GEMM fwd","pid":0,"ts":"soon","dur":1}]})",
       "traceEvents[0].ts = \"soon\": must be a number"},
      {R"({"traceEvents":[{"ph":"X","name":"FFN_UP_GEMM fwd","pid":0,"ts":0,"dur":1,"args":{"flops":-1}}]})",
       "traceEvents[0].flops = -1: must be a finite number >= 0"},
      {R"({})", "holds no trace events"},
      {R"([])", "holds no trace events"},
      {R"({"traceEvents":[{"ph":"X","name":"aten::mm","pid":0,"ts":0,"dur":1},{"ph":"i","name":"x","pid":0,"ts":0}]})",
       "none of its 2 trace events is an operator, status or run end megascale knows"},
      {R"({"traceEvents":[)" + x + R"(],"otherData":{"header":{"worldSize":1,"tp":2,"pp":1,"dp":1}}})",
       "otherData.header.world_size = 1 (tp 2, pp 1, dp 1): must be tp x pp x dp"},
  };
  for (const auto& [json, expected] : cases) {
    ASSERT_TRUE(WriteFileAtomically(path, json).ok());
    CollectSink got;
    Result<ImportStats> r = ImportChromeTrace(path, &got);
    ASSERT_FALSE(r.ok()) << json;
    EXPECT_EQ(r.status().code(), Status::Code::kInvalidInput);
    EXPECT_NE(r.status().message().find(expected), std::string::npos) << r.status().message();
  }
  std::remove(path.c_str());
}

// A header declaring a million ranks over a few events is read in time linear in the ranks (the
// slow-link analysis built every rank's DP ring: quadratic, minutes).
TEST(ChromeImport, AMillionDeclaredRanksOverEightEventsIsDiagnosed) {
  std::string json = R"({"otherData":{"header":{"source":"sim","worldSize":1000000,"tp":1,"pp":1,"dp":1000000}},)"
                     R"("traceEvents":[)";
  for (int r = 0; r < 8; ++r) {
    json += std::string(r ? "," : "") + R"({"ph":"X","name":"FFN_UP_GEMM fwd","tid":0,"dur":5,"pid":)" +
            std::to_string(r) + R"(,"ts":)" + std::to_string(10 * r) + "}";
  }
  const std::string path = TempPath("million.json");
  ASSERT_TRUE(WriteFileAtomically(path, json + "]}").ok());
  Result<DiagnosisReport> r = DiagnoseInput({path, TraceFormat::kAuto, ""});
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->world_size, 1000000);
  EXPECT_EQ(r->recorded_ranks, 8);
  std::remove(path.c_str());
}

// pp 2, dp 2, tp 1, TP_DP_PP: ranks 0, 1 on stage 0; 2, 3 on stage 1. Rows in start order per
// rank, ranks interleaved; times in seconds.
constexpr const char* kCsv =
    "dp_rank,stage,rank,step,optype,start_ts,duration,seq_id,mc,mb_id,gmc\n"
    "0,0,0,0,params-all-gather,0.000,0.001,0,0,,0\n"
    "0,0,0,0,forward-compute,0.001,0.010,0,0,0,0\n"
    "0,1,2,0,forward-recv,0.001,0.0105,0,0,0,1\n"
    "0,0,0,0,forward-send,0.011,0.0005,0,0,0,0\n"
    "0,1,2,0,forward-compute,0.0115,0.010,0,0,0,1\n"
    "0,0,0,0,grads-reduce-scatter,0.012,0.002,0,0,,0\n"
    "0,0,0,0,optimizer,0.014,0.001,0,0,,0\n"
    "0,0,0,0,embedding-grads-all-reduce,0.015,0.001,0,0,,0\n";

TEST(MegatronCsv, MapsTheColumnsAndOptypesToTraceEvents) {
  const std::string csv = TempPath("m.csv"), meta = TempPath("m.json");
  ASSERT_TRUE(WriteFileAtomically(csv, kCsv).ok());
  const std::string meta_text = R"({"dp": 2, "pp": 2, "tp": 1, "vpp": 1,
      "scenario_name": "megatron run", "peak_flops_per_gpu": 1e15, "steps_completed": 1})";
  ASSERT_TRUE(WriteFileAtomically(meta, meta_text).ok());
  CollectSink got;
  Result<ImportStats> stats = ImportTimerTrace(csv, /*json_lines=*/false, meta, &got);
  ASSERT_TRUE(stats.ok()) << stats.status().message();
  EXPECT_EQ(stats->events, 8);   // every row, embedding-grads-all-reduce included
  EXPECT_EQ(stats->skipped, 0);
  EXPECT_EQ(got.header.world_size(), 4);
  EXPECT_EQ(got.header.source(), "import");
  EXPECT_EQ(got.header.scenario_name(), "megatron run");
  EXPECT_EQ(got.header.virtual_stages(), 1);
  ASSERT_TRUE(got.has_end);
  EXPECT_EQ(got.end.steps_completed(), 1);

  std::vector<TraceEvent> rank0, rank2;
  for (const TraceEvent& e : got.events) (e.rank() == 0 ? rank0 : rank2).push_back(e);
  ASSERT_EQ(rank0.size(), 6u);
  ASSERT_EQ(rank2.size(), 2u);
  // Rank 0 in end order: AG ends 1 ms, F ends 11, send 11.5, RS 14, optimizer 15.
  EXPECT_EQ(rank0[0].kind(), DP_ALL_GATHER);
  EXPECT_EQ(rank0[0].lane(), DP_COMM);
  EXPECT_EQ(rank0[0].group(), DP_GROUP);
  EXPECT_EQ(rank0[0].collective_seq(), 0u);
  EXPECT_EQ(rank0[0].microbatch(), -1);  // empty cell
  EXPECT_EQ(rank0[1].name(), "forward-compute");
  EXPECT_EQ(rank0[1].lane(), COMPUTE);
  EXPECT_EQ(rank0[1].phase(), FORWARD);
  EXPECT_EQ(rank0[1].start_ns(), 1000000);
  EXPECT_EQ(rank0[1].end_ns(), 11000000);
  EXPECT_EQ(rank0[2].kind(), PP_SEND);
  EXPECT_EQ(rank0[2].lane(), PP_SEND_LANE);
  EXPECT_EQ(rank0[2].microbatch(), -1);      // a communication row pairs by its occurrence:
  EXPECT_EQ(rank0[2].collective_seq(), 0u);  // the rank's first forward-send
  EXPECT_EQ(rank0[3].kind(), DP_REDUCE_SCATTER);
  EXPECT_EQ(rank0[3].collective_seq(), 0u);  // its type's first in the step (seq_id)
  EXPECT_EQ(rank0[4].kind(), OPTIMIZER_STEP);
  EXPECT_EQ(rank0[4].phase(), OPTIMIZER);
  EXPECT_EQ(rank0[5].name(), "embedding-grads-all-reduce");  // kept: a collective of the
  EXPECT_EQ(rank0[5].kind(), OTHER_COLLECTIVE);              // first and last stage
  EXPECT_EQ(rank0[5].group(), PP_GROUP);
  EXPECT_EQ(rank2[0].kind(), PP_RECV);
  EXPECT_EQ(rank2[0].stage(), 1);
  EXPECT_EQ(rank2[0].end_ns(), 11500000);

  // Every analysis runs on it: the step ends with rank 2's forward at 21.5 ms. (Rank 2 is the only
  // rank recorded on stage 1, and its peer in the embedding all-reduce, on stage 0, is rank 0.)
  TraceInput input{csv, TraceFormat::kAuto, meta};
  Result<DiagnosisReport> r = DiagnoseInput(input);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->steps_completed, 1);
  EXPECT_NEAR(r->iteration_time_s, 0.0215, 1e-12);
  std::remove(csv.c_str());
  std::remove(meta.c_str());
}

TEST(MegatronCsv, ErrorsNameTheFileTheLineAndTheRule) {
  const std::string csv = TempPath("e.csv"), meta = TempPath("e.json");
  ASSERT_TRUE(WriteFileAtomically(meta, R"({"dp": 2, "pp": 2, "tp": 1, "vpp": 1})").ok());
  CollectSink sink;
  ASSERT_TRUE(WriteFileAtomically(csv, "rank,step,optype\n0,0,optimizer\n").ok());
  Result<ImportStats> r = ImportTimerTrace(csv, false, meta, &sink);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("no column \"dp_rank\""), std::string::npos) << r.status().message();

  // Rank 2 is on stage 1 in TP_DP_PP order; the row says stage 0.
  ASSERT_TRUE(WriteFileAtomically(csv, "dp_rank,stage,rank,step,optype,start_ts,duration,seq_id,mc,mb_id,gmc\n"
                                       "0,0,2,0,optimizer,0,1,0,0,0,0\n").ok());
  r = ImportTimerTrace(csv, false, meta, &sink);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("line 2"), std::string::npos) << r.status().message();
  EXPECT_NE(r.status().message().find("rank_order"), std::string::npos) << r.status().message();

  ASSERT_TRUE(WriteFileAtomically(meta, R"({"dp": 2, "pp": 0, "tp": 1, "vpp": 1})").ok());
  r = ImportTimerTrace(csv, false, meta, &sink);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("\"pp\" = 0"), std::string::npos) << r.status().message();
  std::remove(csv.c_str());
  std::remove(meta.c_str());
}

TEST(EndOrderSink, StartOrderedRanksComeOutInEndOrderHoldingOnlyOpsInFlight) {
  CollectSink out;
  EndOrderSink sink(&out);
  // Rank 0 in start order: a long receive overlaps two compute ops.
  sink.OnEvent(Ev(0, 0, PP_RECV, PP_RECV_LANE, 0, 25));
  sink.OnEvent(Ev(0, 0, QKV_GEMM, COMPUTE, 5, 10));
  EXPECT_TRUE(out.events.empty());  // nothing yet starts after 10
  sink.OnEvent(Ev(0, 0, QKV_GEMM, COMPUTE, 10, 20));
  ASSERT_EQ(out.events.size(), 1u);  // the op ending at 10 can go: nothing later ends before it
  sink.OnEvent(Ev(0, 0, QKV_GEMM, COMPUTE, 30, 40));
  ASSERT_EQ(out.events.size(), 3u);
  sink.Flush();
  ASSERT_EQ(out.events.size(), 4u);
  for (size_t i = 1; i < out.events.size(); ++i) {
    EXPECT_LE(out.events[i - 1].end_ns(), out.events[i].end_ns());
  }
  EXPECT_EQ(sink.out_of_order(), 0);
}

TEST(TraceInput, DetectsTheFormatFromTheContent) {
  const std::string a = TempPath("d.json"), b = TempPath("d.csv"), c = TempPath("d.trace");
  ASSERT_TRUE(WriteFileAtomically(a, "  {\"traceEvents\": []}").ok());
  ASSERT_TRUE(WriteFileAtomically(b, kCsv).ok());
  WriteTraceFile(c, Header(1, 1, 1), {});
  EXPECT_EQ(*DetectTraceFormat(a), TraceFormat::kChrome);
  EXPECT_EQ(*DetectTraceFormat(b), TraceFormat::kMegatronCsv);
  EXPECT_EQ(*DetectTraceFormat(c), TraceFormat::kNative);
  EXPECT_FALSE(ParseTraceFormat("parquet").ok());
  EXPECT_EQ(*ParseTraceFormat("csv"), TraceFormat::kMegatronCsv);
  // A CSV without its metadata says what is missing.
  CollectSink sink;
  Result<ImportStats> r = ReplayInput({b, TraceFormat::kAuto, ""}, &sink);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("metadata"), std::string::npos);
  for (const auto& p : {a, b, c}) std::remove(p.c_str());
}

}  // namespace
}  // namespace megascale
