// Timer traces as real jobs write them (timer_import.cc, timer_meta.h, timer_rows.h): metadata in
// either naming and format, rows in any order, steps on their own clocks and sparse, pipeline
// pairs by occurrence, unknown op types kept; bad input gets one message naming the row or field.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>
#include <unistd.h>

#include "base/atomic_file.h"
#include "tests/traces/timer_trace_gen.h"
#include "tests/traces/trace_builders.h"
#include "traces/analysis/diagnose_input.h"
#include "traces/analysis/step_graph.h"
#include "traces/import/timer_meta.h"
#include "traces/import/trace_import.h"

namespace megascale {
namespace {

using testing_traces::CollectSink;

std::string Temp(const std::string& name) {
  return ::testing::TempDir() + "/timer_import_" + std::to_string(::getpid()) + "_" + name;
}

// A file that is removed when the test ends.
struct TempFile {
  TempFile(const std::string& name, const std::string& text) : path(Temp(name)) {
    EXPECT_TRUE(WriteFileAtomically(path, text).ok());
  }
  ~TempFile() { std::remove(path.c_str()); }
  std::string path;
};

std::string MetaError(const std::string& name, const std::string& text) {
  TempFile meta(name, text);
  Result<TimerMeta> r = ReadTimerMeta(meta.path);
  return r.ok() ? "" : r.status().message();
}

TEST(TimerMeta, BothNamingsInYamlOrJsonGiveOneHeader) {
  TempFile yaml("a.yaml", "trial_name: AR\nrun_id: 0\ndp_size: 4\ndsp_size: 2\npp_size: 4\ntp_size: 4\n"
                          "vpp_size: 1\nworld_size: 128\n");
  TempFile json("a.json", R"({"dp": 4, "cp": 2, "pp": 4, "tp": 4, "scenario_name": "AR"})");
  for (const std::string& path : {yaml.path, json.path}) {
    Result<TimerMeta> m = ReadTimerMeta(path);
    ASSERT_TRUE(m.ok()) << m.status().message();
    EXPECT_EQ(m->header.dp(), 4);
    EXPECT_EQ(m->header.pp(), 4);
    EXPECT_EQ(m->header.tp(), 8) << "TP x CP: the ranks inside a worker";
    EXPECT_EQ(m->header.cp(), 2);
    EXPECT_EQ(m->header.virtual_stages(), 1) << "vpp defaults to 1";
    EXPECT_EQ(m->header.world_size(), 128);
    EXPECT_EQ(m->header.scenario_name(), "AR");
    EXPECT_EQ(m->header.model_flops_per_step(), 0) << "unknown stays 0 in the header, n/a in the report";
  }
}

TEST(TimerMeta, BadMetadataNamesTheKeyTheValueAndTheRule) {
  EXPECT_NE(MetaError("w.yaml", "dp_size: 4\npp_size: 4\ntp_size: 4\nworld_size: 60\n")
                .find("\"world_size\" = 60: must equal dp x pp x tp x dsp = 4 x 4 x 4 x 1 = 64"),
            std::string::npos);
  EXPECT_NE(MetaError("m.yaml", "pp_size: 4\ntp_size: 4\n").find("\"dp_size\" = missing"), std::string::npos);
  EXPECT_NE(MetaError("z.json", R"({"dp": 4, "pp": 0, "tp": 1})").find("\"pp\" = 0: must be an integer >= 1"),
            std::string::npos);
  EXPECT_NE(MetaError("d.yaml", "dp_size: 4\ndp: 2\npp_size: 1\ntp_size: 1\n").find("disagrees"), std::string::npos);
  EXPECT_NE(MetaError("y.yaml", "dp_size: [4\npp_size: 1\n").find("line "), std::string::npos);
  EXPECT_NE(MetaError("g.yaml", "dp_size: 1\npp_size: 1\ntp_size: 1\nop_groups: {my-sync: everyone}\n")
                .find("op_groups.my-sync = \"everyone\""),
            std::string::npos);
  EXPECT_NE(MetaError("o.yaml", "dp_size: 1\npp_size: 1\ntp_size: 1\nrank_order: PP_FIRST\n").find("rank_order"),
            std::string::npos);
  // Types: a name is text, a number is a number, a value is one value.
  EXPECT_NE(MetaError("n.json", R"({"dp": 1, "pp": 1, "tp": 1, "scenario_name": 7})")
                .find("\"scenario_name\" = 7: must be a text, not a number"),
            std::string::npos);
  EXPECT_NE(MetaError("l.json", R"({"dp": 1, "pp": 1, "tp": 1, "gpu": ["A100"]})").find("\"gpu\" = (not a single value)"),
            std::string::npos);
  EXPECT_NE(MetaError("p.json", R"({"dp": 1, "pp": 1, "tp": 1, "peak_flops_per_gpu": "lots"})")
                .find("\"peak_flops_per_gpu\" = lots: must be a number >= 0"),
            std::string::npos);
  EXPECT_NE(MetaError("f.json", R"({"dp": 1, "pp": 1, "tp": 1, "model_flops_per_step": -1e15})")
                .find("\"model_flops_per_step\" = -1e15: must be a number >= 0"),
            std::string::npos);
  EXPECT_NE(MetaError("t.json", R"({"dp": 1, "pp": 1, "tp": 2147483647})").find("\"tp\" = 2147483647"),
            std::string::npos);
  // A quoted number is a name.
  TempFile quoted("q.json", R"({"dp": 1, "pp": 1, "tp": 1, "scenario_name": "7"})");
  Result<TimerMeta> named = ReadTimerMeta(quoted.path);
  ASSERT_TRUE(named.ok()) << named.status().message();
  EXPECT_EQ(named->header.scenario_name(), "7");
}

constexpr const char* kHeaderLine = "dp_rank,stage,rank,step,optype,start_ts,duration,seq_id,mc,mb_id,gmc\n";
constexpr const char* kMeta2x2 = "dp_size: 2\npp_size: 2\ntp_size: 1\n";

std::string ImportError(const std::string& csv, const std::string& meta = kMeta2x2) {
  TempFile c("e.csv", csv), m("e.yaml", meta);
  CollectSink sink;
  Result<ImportStats> r = ImportTimerTrace(c.path, false, m.path, &sink);
  return r.ok() ? "" : r.status().message();
}

TEST(TimerImport, BadRowsNameTheLineAndTheField) {
  EXPECT_NE(ImportError("dp_rank,stage,rank,step,optype,start_ts,seq_id\n0,0,0,0,gc,0,0\n")
                .find("no column \"duration\""),
            std::string::npos);
  const std::string bad_number = ImportError(std::string(kHeaderLine) + "0,0,0,0,gc,0.1,abc,0,0,-1,0\n");
  EXPECT_NE(bad_number.find("line 2: duration = \"abc\": must be finite seconds"), std::string::npos) << bad_number;
  EXPECT_NE(ImportError(std::string(kHeaderLine) + "0,0,0,0,gc,0.1,-1,0,0,-1,0\n").find("must be >= 0 seconds"),
            std::string::npos);
  EXPECT_NE(ImportError(std::string(kHeaderLine) + "0,0,0,0,gc,0.1,inf,0,0,-1,0\n").find("must be finite seconds"),
            std::string::npos);
  EXPECT_NE(ImportError(std::string(kHeaderLine) + "0,0,0,0,gc,-1e300,1,0,0,-1,0\n").find("start_ts = \"-1e300\": must be within"),
            std::string::npos);
  EXPECT_NE(ImportError(std::string(kHeaderLine) + "0,0,0,1.5,gc,0.1,1,0,0,-1,0\n").find("step = \"1.5\": must be an integer"),
            std::string::npos);
  // A header and no row: nothing to diagnose, as a Chrome file without events.
  const std::string empty = ImportError(kHeaderLine);
  EXPECT_NE(empty.find("holds no rows"), std::string::npos) << empty;
  // Sizes that do not match the ranks: rank 4 in a 2 x 2 job.
  const std::string beyond = ImportError(std::string(kHeaderLine) + "0,0,0,0,gc,0,1,0,0,-1,0\n1,1,4,0,gc,0,1,0,0,-1,0\n");
  EXPECT_NE(beyond.find("line 3: rank = 4: must be in [0, world_size"), std::string::npos) << beyond;
  // Rank 2 is dp 0 of stage 1 (tp fastest, then dp, then pp).
  const std::string placed = ImportError(std::string(kHeaderLine) + "1,0,2,0,gc,0,1,0,0,-1,0\n");
  EXPECT_NE(placed.find("line 2: rank 2 has stage 0, dp_rank 1 but the metadata's sizes put it on stage 1, dp_rank 0"),
            std::string::npos)
      << placed;
}

// By content, a CSV that names either timer column is a timer trace: the one it lacks is named
// (it was read as a corrupt binary trace when it lacked start_ts or optype).
TEST(TimerImport, AutoDetectionTakesATimerCsvMissingAColumnAndNamesIt) {
  for (const char* missing : {"start_ts", "optype"}) {
    std::string header = kHeaderLine;
    const size_t at = header.find(std::string(missing) + ",");
    header.erase(at, std::string(missing).size() + 1);
    TempFile c("m.csv", header + "0,0,0,0,gc,0,0,0,-1,0\n"), m("m.yaml", kMeta2x2);
    Result<TraceFormat> format = DetectTraceFormat(c.path);
    ASSERT_TRUE(format.ok());
    EXPECT_EQ(*format, TraceFormat::kMegatronCsv) << missing;
    CollectSink sink;
    Result<ImportStats> r = ReplayInput({c.path, TraceFormat::kAuto, m.path}, &sink);
    ASSERT_FALSE(r.ok()) << missing;
    EXPECT_NE(r.status().message().find("no column \"" + std::string(missing) + "\""), std::string::npos)
        << r.status().message();
  }
}

TEST(TimerImport, StepsOnTheirOwnClocksAreLaidEndToEndAndKeepTheirNumbers) {
  // Two sampled steps (16 and 21), each on its own clock from 0; rank 0 alone, pp 1.
  TempFile csv("c.csv", std::string(kHeaderLine) +
                            "0,0,0,21,forward-compute,0.0,2.0,0,0,0,0\n"
                            "0,0,0,16,forward-compute,0.0,1.0,0,0,0,0\n"
                            "0,0,0,16,optimizer,1.0,0.5,0,0,-1,0\n"
                            "0,0,0,21,optimizer,2.0,0.5,0,0,-1,0\n");
  TempFile meta("c.yaml", "dp_size: 1\npp_size: 1\ntp_size: 8\n");
  Result<DiagnosisReport> r = DiagnoseInput({csv.path, TraceFormat::kAuto, meta.path});
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ(r->steps_completed, 2) << "two steps, none invented between 16 and 21";
  EXPECT_EQ(r->step_ids, (std::vector<int64_t>{16, 21}));
  EXPECT_NEAR(r->step_times_s[0], 1.5, 1e-9);
  EXPECT_NEAR(r->step_times_s[1], 2.5, 1e-9);
  EXPECT_EQ(r->recorded_ranks, 1);
  EXPECT_TRUE(std::isnan(r->mfu)) << "no FLOPs: n/a, never 0";
  bool noted = false;
  for (const std::string& n : r->notes) noted |= n.find("each step has its own clock") != std::string::npos;
  EXPECT_TRUE(noted);
  // Breakdown over the one recorded rank, not diluted by its 7 absent TP peers.
  EXPECT_NEAR(r->breakdown.compute_s, 2.0, 1e-9);
}

TEST(TimerImport, PipelinePairsByOccurrenceAndUnknownOpTypesStay) {
  // pp 2, dp 1: stage 0 (rank 0) sends two forwards to stage 1 (rank 1); communication rows
  // carry mb_id -1. A receive that starts after the last forward of its rank began was never
  // launched (a profiler's no-op). "my-host-op" and "tp-sync-all-reduce" are not in the table.
  TempFile csv("p.csv", std::string(kHeaderLine) +
                            "0,0,0,0,forward-compute,0.00,0.10,0,0,0,0\n"
                            "0,0,0,0,forward-send,0.10,0.02,0,0,-1,0\n"
                            "0,0,0,0,forward-compute,0.10,0.10,1,0,1,0\n"
                            "0,0,0,0,forward-send,0.20,0.02,1,0,-1,0\n"
                            "0,0,0,0,my-host-op,0.20,0.05,0,0,-1,0\n"
                            "0,1,1,0,forward-recv,0.00,0.12,0,0,-1,1\n"
                            "0,1,1,0,forward-compute,0.12,0.10,0,0,0,1\n"
                            "0,1,1,0,forward-recv,0.22,0.00,1,0,-1,1\n"
                            "0,1,1,0,forward-compute,0.22,0.10,1,0,1,1\n"
                            "0,1,1,0,forward-recv,0.40,0.01,2,0,-1,1\n"
                            "0,1,1,0,tp-sync-all-reduce,0.32,0.01,0,0,-1,1\n");
  TempFile meta("p.yaml", "dp_size: 1\npp_size: 2\ntp_size: 1\n");
  CollectSink got;
  Result<ImportStats> stats = ImportTimerTrace(csv.path, false, meta.path, &got);
  ASSERT_TRUE(stats.ok()) << stats.status().message();
  EXPECT_EQ(stats->events, 11) << "every row stays";
  int no_ops = 0;
  for (const TraceEvent& e : got.events) {
    if (e.name() == "forward-recv" && e.start_ns() == 400'000'000) {
      EXPECT_EQ(e.group(), NO_GROUP) << "the no-op pairs with nothing";
      ++no_ops;
    } else if (e.name() == "forward-recv" || e.name() == "forward-send") {
      EXPECT_EQ(e.microbatch(), -1);
      EXPECT_EQ(e.collective_seq(), e.start_ns() < 150'000'000 ? 0u : 1u) << e.name() << " at " << e.start_ns();
    }
    if (e.name() == "my-host-op") {
      EXPECT_EQ(e.kind(), HOST_OP);
      EXPECT_EQ(e.lane(), COMPUTE);
    }
    if (e.name() == "tp-sync-all-reduce") {
      EXPECT_EQ(e.kind(), OTHER_COLLECTIVE);
      EXPECT_EQ(e.group(), TP_GROUP);
    }
  }
  EXPECT_EQ(no_ops, 1);
  std::string notes;
  for (const std::string& n : stats->notes) notes += n + "\n";
  EXPECT_NE(notes.find("1 send/receive row(s) lie outside the compute"), std::string::npos) << notes;
  EXPECT_NE(notes.find("my-host-op (compute stream)"), std::string::npos) << notes;
  EXPECT_NE(notes.find("tp-sync-all-reduce (TP_GROUP collective)"), std::string::npos) << notes;
}

TEST(TimerImport, WithVirtualStagesTheLastStageSendsToTheFirst) {
  // pp 2, two model chunks: stage 1's forward-send goes round to stage 0 (its second chunk).
  TempFile csv("v.csv", std::string(kHeaderLine) +
                            "0,0,0,0,forward-compute,0.00,0.10,0,0,0,0\n"
                            "0,0,0,0,forward-send,0.10,0.01,0,0,-1,0\n"
                            "0,0,0,0,forward-recv,0.20,0.11,0,1,-1,2\n"
                            "0,0,0,0,forward-compute,0.31,0.10,1,1,0,2\n"
                            "0,0,0,0,forward-send,0.41,0.01,1,1,-1,2\n"
                            "0,1,1,0,forward-recv,0.00,0.11,0,0,-1,1\n"
                            "0,1,1,0,forward-compute,0.11,0.10,0,0,0,1\n"
                            "0,1,1,0,forward-send,0.21,0.10,0,0,-1,1\n"
                            "0,1,1,0,forward-recv,0.31,0.11,1,1,-1,3\n"
                            "0,1,1,0,forward-compute,0.42,0.10,1,1,0,3\n");
  for (int vpp : {2, 1}) {
    TempFile meta("v.yaml", "dp_size: 1\npp_size: 2\ntp_size: 1\nvpp_size: " + std::to_string(vpp) + "\n");
    CollectSink got;
    ASSERT_TRUE(ImportTimerTrace(csv.path, false, meta.path, &got).ok());
    Result<StepGraph> g = StepGraph::Build(got.events, got.header);
    ASSERT_TRUE(g.ok()) << g.status().message();
    // Three transfers with the wrap; without virtual stages the last stage sends to no one.
    EXPECT_EQ(g->instances(), vpp == 2 ? 3 : 2) << "vpp " << vpp;
  }
}

TEST(TimerImport, APairMissingItsHalfIsReportedAndLeftOutOfTheWhatIf) {
  testing_traces::TimerGenOptions o;
  o.dp = 2;
  o.pp = 4;
  o.microbatches = 4;
  const testing_traces::TimerTraceGen gen(o);
  // Drop stage 1's first forward-send of dp 0 in step 21.
  std::istringstream in(gen.Csv());
  std::string line, csv;
  bool dropped = false;
  const std::string target = "0,1," + std::to_string(gen.RankOf(0, 1)) + ",21,forward-send,";
  while (std::getline(in, line)) {
    if (!dropped && line.rfind(target, 0) == 0 && line.find(",0,0,-1,1") != std::string::npos) {
      dropped = true;
      continue;
    }
    csv += line + "\n";
  }
  ASSERT_TRUE(dropped);
  TempFile trace("half.csv", csv), meta("half.yaml", gen.MetaYaml());
  Result<DiagnosisReport> r = DiagnoseInput({trace.path, TraceFormat::kAuto, meta.path});
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_TRUE(r->straggler_analysis.ran);
  EXPECT_EQ(r->straggler_analysis.unmatched, 1);
  std::string notes;
  for (const std::string& n : r->notes) notes += n + "\n";
  const std::string rank = std::to_string(gen.RankOf(0, 2));
  EXPECT_NE(notes.find("1 communication op(s) found no peer"), std::string::npos) << notes;
  EXPECT_NE(notes.find("step 21 rank " + rank + " (dp 0, stage 2) forward-recv #0"), std::string::npos) << notes;
}

TEST(TimerImport, JsonLinesReadLikeCsv) {
  testing_traces::TimerGenOptions o;
  o.dp = 2;
  o.pp = 2;
  o.microbatches = 2;
  o.steps = {3};
  const testing_traces::TimerTraceGen gen(o);
  TempFile csv("j.csv", gen.Csv()), jsonl("j.jsonl", gen.JsonLines()), meta("j.json", gen.MetaJson());
  CollectSink a, b;
  ASSERT_TRUE(ReplayInput({csv.path, TraceFormat::kAuto, meta.path}, &a).ok());
  Result<ImportStats> r = ReplayInput({jsonl.path, TraceFormat::kAuto, meta.path}, &b);
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ(a.events.size(), b.events.size());
  for (size_t i = 0; i < a.events.size(); ++i) {
    EXPECT_EQ(a.events[i].SerializeAsString(), b.events[i].SerializeAsString()) << i;
  }
  EXPECT_EQ(*DetectTraceFormat(jsonl.path), TraceFormat::kTimerJsonLines);
  EXPECT_EQ(*DetectTraceFormat(csv.path), TraceFormat::kMegatronCsv);
  TempFile broken("b.jsonl", "{\"dp_rank\": 0, \"stage\": 0, \"rank\": 0, \"step\": 0, \"optype\": \"gc\", "
                             "\"start_ts\": 0, \"duration\": 1}\n{\"dp_rank\": 0\n");
  CollectSink c;
  Result<ImportStats> bad = ReplayInput({broken.path, TraceFormat::kTimerJsonLines, meta.path}, &c);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("line 2 is not a JSON object"), std::string::npos) << bad.status().message();
}

}  // namespace
}  // namespace megascale
