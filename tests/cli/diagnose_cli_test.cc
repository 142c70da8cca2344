// `megascale diagnose` through the binary: each flag does what it says (format, meta, html,
// heatmap, json, straggler threshold), and bad values get one error line and exit code 2 with no
// output file left behind.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <fstream>
#include <sstream>
#include <string>

#include "tests/cli/cli_runner.h"
#include "tests/traces/timer_trace_gen.h"

namespace megascale {
namespace {

using nlohmann::json;
using testing::FileExists;
using testing::RunCli;
using testing::Slurp;
using testing::WriteTemp;

std::string Temp(const std::string& name) {
  return ::testing::TempDir() + "/diag_cli_" + std::to_string(::getpid()) + "_" + name;
}

// straggler-64: rank 37 computes at 90% speed (64 ranks, TP 4 x PP 2 x DP 8, 2 steps). Simulated
// once per test process into a trace and its Chrome export.
struct Traces {
  std::string trace = Temp("s64.trace");
  std::string chrome = Temp("s64.json");
};

const Traces& StragglerTraces() {
  static const Traces t = [] {
    Traces t;
    auto r = RunCli("simulate -q " + std::string(MEGASCALE_SOURCE_DIR) +
                    "/scenarios/straggler-64.textproto --trace " + t.trace + " --chrome " + t.chrome);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return t;
  }();
  return t;
}

json Json(const testing::CliResult& r) {
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return r.exit_code == 0 ? json::parse(r.out) : json();
}

int Lines(const std::string& text) {
  int n = 0;
  for (char c : text) n += c == '\n';
  return n;
}

int Count(const std::string& text, const std::string& what) {
  int n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// A 4-rank Megatron CSV (dp 4): 2 steps of forward then backward compute; rank 2 computes 10%
// slower, so its peers' median is 1.0 and its slowdown 0.1.
std::string StragglerCsv() {
  std::ostringstream csv;
  csv << "dp_rank,stage,rank,step,optype,start_ts,duration,seq_id,mc,mb_id,gmc\n";
  for (int step = 0; step < 2; ++step) {
    for (int rank = 0; rank < 4; ++rank) {
      const double scale = rank == 2 ? 1.1 : 1.0;
      const double t0 = step * 10.0;
      csv << rank << ",0," << rank << "," << step << ",forward-compute," << t0 << "," << 1.0 * scale
          << ",0,0,0,0\n";
      csv << rank << ",0," << rank << "," << step << ",backward-compute," << t0 + 1.0 * scale << ","
          << 2.0 * scale << ",1,0,0,0\n";
    }
  }
  return csv.str();
}

const char* kCsvMeta = R"({"dp": 4, "pp": 1, "tp": 1, "vpp": 1, "scenario_name": "csv-four"})";

TEST(DiagnoseCli, TextByDefaultJsonWithFlag) {
  const Traces& t = StragglerTraces();
  auto text = RunCli("diagnose " + t.trace);
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("37"), std::string::npos) << text.out;
  EXPECT_THROW(json::parse(text.out), json::parse_error) << "the default output is text";
  json j = Json(RunCli("diagnose --json " + t.trace));
  ASSERT_EQ(j["stragglers"].size(), 1u) << j["stragglers"].dump();
  EXPECT_EQ(j["stragglers"][0]["rank"], 37);
  EXPECT_FALSE(j["what_if"].empty()) << "the CLI runs the what-if pass";
}

TEST(DiagnoseCli, StragglerThresholdIsApplied) {
  const Traces& t = StragglerTraces();
  // Rank 37 is ~11% slower: above 0.05, below 0.5.
  EXPECT_EQ(Json(RunCli("diagnose --json --straggler-threshold 0.05 " + t.trace))["stragglers"].size(), 1u);
  EXPECT_TRUE(Json(RunCli("diagnose --json --straggler-threshold 0.5 " + t.trace))["stragglers"].empty());
}

TEST(DiagnoseCli, RankViewShowsTheStragglersGroupsOrTheRankAskedFor) {
  const Traces& t = StragglerTraces();
  // By default the top straggler, rank 37: tp 1, dp 1, pp 1 of TP 4 x PP 2 x DP 8.
  json j = Json(RunCli("diagnose --json " + t.trace));
  ASSERT_TRUE(j["rank_view"].is_object());
  EXPECT_EQ(j["rank_view"]["rank"], 37);
  EXPECT_EQ(j["rank_view"]["why"], "top straggler");
  EXPECT_EQ(j["rank_view"]["tp_group"].size(), 4u);
  EXPECT_EQ(j["rank_view"]["dp_group"].size(), 8u);
  EXPECT_EQ(j["rank_view"]["pp_group"].size(), 2u);
  for (const auto& m : j["rank_view"]["tp_group"]) EXPECT_EQ(m["straggler"], m["rank"] == 37);
  EXPECT_EQ(Json(RunCli("diagnose --json --rank 2 " + t.trace))["rank_view"]["rank"], 2);
  auto bad = RunCli("diagnose --rank 64 " + t.trace);
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("--rank = 64: must be a rank of the trace, 0..63"), std::string::npos) << bad.err;
}

TEST(DiagnoseCli, ChromeTraceGivesTheSameFindingsAutoOrForced) {
  const Traces& t = StragglerTraces();
  json ours = Json(RunCli("diagnose --json " + t.trace));
  for (const std::string format : {"", "--format chrome "}) {
    json chrome = Json(RunCli("diagnose --json " + format + t.chrome));
    ASSERT_EQ(chrome["stragglers"].size(), 1u) << format;
    EXPECT_EQ(chrome["stragglers"][0]["rank"], 37) << format;
    EXPECT_DOUBLE_EQ(chrome["iteration_time_s"].get<double>(), ours["iteration_time_s"].get<double>());
    // The export keeps what the step graph needs (launch_ns as queued_us): the same what-if.
    EXPECT_NEAR(chrome["straggler_analysis"]["slowdown"].get<double>(),
                ours["straggler_analysis"]["slowdown"].get<double>(), 1e-6) << format;
  }
}

// The straggler what-if against the truth the simulator can give: the same job without the slow
// GPU. Its ideal replay must recover most of the loss and name the slow GPU's worker (dp 1,
// stage 1). (It read S = 1.014 where the truth is 1.067, naming stage 0's workers, while the step
// graph tied the backward to gradient reductions and queued buckets to the step's last op.)
TEST(DiagnoseCli, TheStragglerWhatIfRecoversWhatTheSlowGpuCost) {
  const Traces& t = StragglerTraces();
  std::string healthy = Slurp(std::string(MEGASCALE_SOURCE_DIR) + "/scenarios/straggler-64.textproto");
  const size_t faults = healthy.find("\nfaults {");
  ASSERT_NE(faults, std::string::npos);
  healthy = healthy.substr(0, faults + 1);  // the scenario without its faults block, its last part
  const std::string path = WriteTemp("diag_cli_healthy64.textproto", healthy);
  json sim = Json(RunCli("simulate -q --json " + path));
  const double healthy_s = sim["iteration_time_s"].get<double>();
  json j = Json(RunCli("diagnose --json " + t.trace));
  const json& a = j["straggler_analysis"];
  const double truth = j["iteration_time_s"].get<double>() / healthy_s;
  ASSERT_GT(truth, 1.04) << "the slow GPU costs the job several percent";
  EXPECT_NEAR(a["slowdown"].get<double>(), truth, 0.03) << a.dump();
  ASSERT_FALSE(a["findings"].empty()) << a.dump();
  EXPECT_EQ(a["findings"][0]["kind"], "worker");
  EXPECT_EQ(a["findings"][0]["worker"]["dp"], 1);
  EXPECT_EQ(a["findings"][0]["worker"]["stage"], 1);
  EXPECT_GT(a["m_w"].get<double>(), 0.5);
}

// A slow NIC (faults-degraded-nic-64: rank 21's at 25 %) slows its DP ring, whose TP peers then
// hold every replica of its stage alike: no worker stands out (M_W ~ 0) and the what-if named the
// DP reduce-scatter, an op type. The slow-link analysis names rank 21, and the transfers rank 21
// takes part in, alone as they ran, carry the loss: the finding names them.
TEST(DiagnoseCli, TheStragglerWhatIfNamesTheSlowNicsTransfers) {
  const std::string scenario = std::string(MEGASCALE_SOURCE_DIR) + "/scenarios/faults-degraded-nic-64.textproto";
  const std::string trace = Temp("nic64.trace");
  ASSERT_EQ(RunCli("simulate -q " + scenario + " --trace " + trace).exit_code, 0);
  std::string healthy = Slurp(scenario);
  const size_t faults = healthy.find("\nfaults {");
  ASSERT_NE(faults, std::string::npos);
  const std::string path = WriteTemp("diag_cli_healthy_nic64.textproto", healthy.substr(0, faults + 1));
  const double healthy_s = Json(RunCli("simulate -q --json " + path))["iteration_time_s"].get<double>();
  json j = Json(RunCli("diagnose --json " + trace));
  std::remove(trace.c_str());
  std::remove(path.c_str());
  ASSERT_EQ(j["slow_link"]["rank"], 21) << j["slow_link"].dump();
  const json& a = j["straggler_analysis"];
  ASSERT_GT(j["iteration_time_s"].get<double>() / healthy_s, 1.1) << "the slow NIC costs the job";
  ASSERT_EQ(a["findings"].size(), 1u) << a.dump();
  const json& f = a["findings"][0];
  EXPECT_EQ(f["kind"], "link") << f.dump();
  EXPECT_EQ(f["ranks"], json::array({21}));
  EXPECT_GE(f["m"].get<double>(), 0.5) << f.dump();
  EXPECT_NEAR(f["slowdown"].get<double>(), a["slowdown"].get<double>(), 0.5 * (a["slowdown"].get<double>() - 1));
  EXPECT_LT(a["m_w"].get<double>(), 0.5);
  // A job without a slow link gets no such finding (straggler-64 names its slow GPU's worker).
  for (const json& g : Json(RunCli("diagnose --json " + StragglerTraces().trace))["straggler_analysis"]["findings"]) {
    EXPECT_NE(g["kind"], "link") << g.dump();
  }
}

TEST(DiagnoseCli, MetaFillsWhatAChromeTraceLacks) {
  const Traces& t = StragglerTraces();
  const std::string meta = WriteTemp("diag_cli_chrome_meta.json",
                                     R"({"dp": 8, "pp": 2, "tp": 4, "vpp": 1, "scenario_name": "from-meta",
                                         "peak_flops_per_gpu": 1e15})");
  json plain = Json(RunCli("diagnose --json " + t.chrome));
  json with_meta = Json(RunCli("diagnose --json --meta " + meta + " " + t.chrome));
  EXPECT_EQ(with_meta["scenario_name"], "from-meta");
  // MFU is model FLOPs over peak: the meta's 1 PFLOP/s replaces the A100's 312 TFLOP/s.
  EXPECT_NEAR(with_meta["mfu"].get<double>(), plain["mfu"].get<double>() * 312e12 / 1e15,
              1e-9 * plain["mfu"].get<double>());
}

TEST(DiagnoseCli, CsvWithMetaAutoAndForced) {
  const std::string csv = WriteTemp("diag_cli.csv", StragglerCsv());
  const std::string meta = WriteTemp("diag_cli_meta.json", kCsvMeta);
  for (const std::string format : {"", "--format csv "}) {
    json j = Json(RunCli("diagnose --json " + format + "--meta " + meta + " " + csv));
    EXPECT_EQ(j["scenario_name"], "csv-four");
    EXPECT_EQ(j["world_size"], 4);
    ASSERT_EQ(j["stragglers"].size(), 1u) << j.dump();
    EXPECT_EQ(j["stragglers"][0]["rank"], 2);
    EXPECT_NEAR(j["stragglers"][0]["slowdown"].get<double>(), 0.1, 1e-6);
  }
}

TEST(DiagnoseCli, HtmlReportIsWritten) {
  const std::string html = Temp("report.html");
  std::remove(html.c_str());
  auto r = RunCli("diagnose " + StragglerTraces().trace + " --html " + html);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string page = Slurp(html);
  EXPECT_NE(page.find("<html"), std::string::npos);
  EXPECT_GE(Count(page, "<svg"), 2) << "breakdown, heat map, timeline";
  EXPECT_NE(page.find("rank 37"), std::string::npos);
}

TEST(DiagnoseCli, HeatmapCsvHasOneLinePerRankAndStep) {
  const std::string csv = Temp("heat.csv");
  std::remove(csv.c_str());
  ASSERT_EQ(RunCli("diagnose " + StragglerTraces().trace + " --heatmap " + csv).exit_code, 0);
  const std::string text = Slurp(csv);
  EXPECT_EQ(text.substr(0, text.find('\n')), "step,rank,dp,pp,tp,compute_s");
  EXPECT_EQ(Lines(text), 1 + 64 * 2) << "header, then 64 ranks x 2 completed steps";
}

TEST(DiagnoseCli, HeatmapSvgHasOneCellPerRank) {
  const std::string svg = Temp("heat.svg");
  std::remove(svg.c_str());
  ASSERT_EQ(RunCli("diagnose " + StragglerTraces().trace + " --heatmap " + svg).exit_code, 0);
  const std::string text = Slurp(svg);
  EXPECT_EQ(text.rfind("<svg", 0), 0u) << "a standalone SVG document";
  EXPECT_NE(text.find("xmlns=\"http://www.w3.org/2000/svg\""), std::string::npos);
  EXPECT_EQ(Count(text, "<rect"), 64);
  EXPECT_NE(text.find("<title>rank 37:"), std::string::npos);
}

// One line "megascale: error: <field> = <value>: <rule>", exit 2, and no output file.
void ExpectRejected(const std::string& args, const std::string& field, const std::string& out_file) {
  std::remove(out_file.c_str());
  auto r = RunCli(args);
  EXPECT_EQ(r.exit_code, 2) << args << "\n" << r.err;
  EXPECT_EQ(r.err.rfind("megascale: error: " + field + " = ", 0), 0u) << args << "\n" << r.err;
  EXPECT_EQ(Lines(r.err), 1) << r.err;
  EXPECT_TRUE(r.out.empty()) << r.out;
  EXPECT_FALSE(FileExists(out_file)) << args;
}

TEST(DiagnoseCli, BadValuesAreRejected) {
  const std::string trace = StragglerTraces().trace;
  const std::string html = Temp("bad.html");
  ExpectRejected("diagnose --format xml --html " + html + " " + trace, "format", html);
  ExpectRejected("diagnose --straggler-threshold -1 --html " + html + " " + trace, "--straggler-threshold", html);
  ExpectRejected("diagnose --straggler-threshold abc --html " + html + " " + trace, "--straggler-threshold", html);
  ExpectRejected("diagnose --html " + html + " " + Temp("missing.trace"), "trace", html);
  ExpectRejected("diagnose --meta " + Temp("missing.json") + " --html " + html + " " + trace, "--meta", html);
  ExpectRejected("diagnose --heatmap " + Temp("heat.png") + " " + trace, "--heatmap", Temp("heat.png"));
  ExpectRejected("diagnose --html /no/such/folder/r.html " + trace, "--html", "/no/such/folder/r.html");
  // A metadata file on our own format (which carries its header) is a mistake, not ignored.
  const std::string meta = WriteTemp("diag_cli_meta2.json", kCsvMeta);
  ExpectRejected("diagnose --meta " + meta + " --html " + html + " " + trace, "meta", html);
}

TEST(DiagnoseCli, BadInputFilesFailCleanly) {
  const std::string html = Temp("bad_input.html");
  std::remove(html.c_str());
  // A CSV without its metadata.
  const std::string csv = WriteTemp("diag_cli2.csv", StragglerCsv());
  auto r = RunCli("diagnose --html " + html + " " + csv);
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("metadata"), std::string::npos) << r.err;
  // Corrupt metadata.
  const std::string meta = WriteTemp("diag_cli_meta3.json", R"({"dp": 0, "pp": 1, "tp": 1, "vpp": 1})");
  r = RunCli("diagnose --meta " + meta + " --html " + html + " " + csv);
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("\"dp\" = 0"), std::string::npos) << r.err;
  // A Chrome trace read as ours is corrupt.
  r = RunCli("diagnose --format trace --html " + html + " " + StragglerTraces().chrome);
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_EQ(r.err.rfind("megascale: error: ", 0), 0u) << r.err;
  EXPECT_FALSE(FileExists(html)) << "no report from a failed diagnosis";
}

// The temporary trace a killed `megascale run` leaves (or any trace of ours cut mid-record) is
// diagnosed as a failed run up to the cut, with a note; the file is left as it was.
TEST(DiagnoseCli, ATraceCutMidRecordIsDiagnosedAsAFailedRun) {
  const std::string whole = Slurp(StragglerTraces().trace);
  const std::string cut = WriteTemp("diag_cli_cut.trace", whole.substr(0, whole.size() * 2 / 3));
  auto r = RunCli("diagnose --json " + cut);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json j = json::parse(r.out);
  EXPECT_EQ(j.at("run_failed"), true);
  ASSERT_FALSE(j.at("notes").empty());
  EXPECT_NE(j.at("notes")[0].get<std::string>().find("ends inside a record"), std::string::npos) << j.at("notes");
  EXPECT_EQ(Slurp(cut).size(), whole.size() * 2 / 3) << "the cut file is left as it was";
  std::remove(cut.c_str());
}

// A timer trace as a real job writes it (CSV, YAML metadata in the what-if studies' naming, steps
// 16, 21, ... each on its own clock, one rank recorded per worker), worker (dp 2, stage 1) 1.8x
// slower: `diagnose TRACE.csv --meta META.yaml` with nothing converted by hand.
struct TimerTrace {
  std::string csv, yaml;
  double truth = 0;
};
const TimerTrace& SlowWorkerTimerTrace() {
  static const TimerTrace t = [] {
    testing_traces::TimerGenOptions o;
    o.dp = 4;
    o.pp = 4;
    o.tp = 4;
    o.slow_dp = 2;
    o.slow_stage = 1;
    o.slow_factor = 1.8;
    const testing_traces::TimerTraceGen gen(o);
    // Per process: ctest runs the tests of this file side by side, and a shared name would be read
    // while another process rewrites it.
    const std::string csv = Temp("timer.csv"), yaml = Temp("timer.yaml");
    std::ofstream(csv) << gen.Csv();
    std::ofstream(yaml) << gen.MetaYaml();
    return TimerTrace{csv, yaml, gen.truth().slowdown};
  }();
  return t;
}

TEST(DiagnoseCli, TimerTraceWithYamlMetaGivesTheStragglerAnalysis) {
  const TimerTrace& t = SlowWorkerTimerTrace();
  json j = Json(RunCli("diagnose --json " + t.csv + " --meta " + t.yaml));
  EXPECT_TRUE(j["mfu"].is_null()) << "no FLOPs in the metadata: null, never 0";
  EXPECT_EQ(j["world_size"], 64);
  EXPECT_EQ(j["recorded_ranks"], 16);
  EXPECT_EQ(j["step_ids"], json({16, 21, 27, 29, 34, 35}));
  const json& a = j["straggler_analysis"];
  ASSERT_TRUE(a.is_object()) << j.dump();
  for (const char* key : {"slowdown", "t_nodelay_s", "t_ideal_s", "m_w", "m_s", "by_worker", "by_stage", "by_optype",
                          "steps_used", "findings"}) {
    EXPECT_TRUE(a.contains(key)) << key;
  }
  EXPECT_NEAR(a["slowdown"].get<double>(), t.truth, 0.02 * t.truth);
  EXPECT_EQ(a["steps_used"], json({16, 21, 27, 29, 34, 35}));
  EXPECT_EQ(a["by_worker"].size(), 16u);
  EXPECT_EQ(a["by_worker"][0]["dp"], 2);
  EXPECT_EQ(a["by_worker"][0]["stage"], 1);
  EXPECT_EQ(a["by_stage"].size(), 4u);
  ASSERT_EQ(a["findings"].size(), 1u) << a["findings"].dump();
  EXPECT_EQ(a["findings"][0]["kind"], "worker");
  EXPECT_EQ(a["findings"][0]["worker"], json({{"dp", 2}, {"stage", 1}}));
  EXPECT_TRUE(a["findings"][0]["mfu_lost"].is_null());
  auto text = RunCli("diagnose -q " + t.csv + " --meta " + t.yaml);
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("MFU n/a"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("finding: worker, worker (dp 2, stage 1)"), std::string::npos) << text.out;
}

TEST(DiagnoseCli, TimelineIsPerfettoJsonOfTheRealAndTheIdealStep) {
  const TimerTrace& t = SlowWorkerTimerTrace();
  const std::string timeline = Temp("timeline.json");
  std::remove(timeline.c_str());
  ASSERT_EQ(RunCli("diagnose -q " + t.csv + " --meta " + t.yaml + " --timeline " + timeline).exit_code, 0);
  const json j = json::parse(Slurp(timeline));
  ASSERT_TRUE(j["traceEvents"].is_array());
  int real = 0, ideal = 0, ops = 0;
  for (const json& e : j["traceEvents"]) {
    if (e["ph"] == "X") {
      ++ops;
      EXPECT_TRUE(e["ts"].is_number() && e["dur"].is_number() && e["pid"].is_number() && e["tid"].is_number());
      EXPECT_GE(e["dur"].get<double>(), 0);
    } else if (e["ph"] == "M" && e["name"] == "process_name") {
      const std::string name = e["args"]["name"];
      real += name.rfind("real: ", 0) == 0;
      ideal += name.rfind("ideal: ", 0) == 0;
    }
  }
  EXPECT_EQ(real, 16);
  EXPECT_EQ(ideal, 16);
  EXPECT_GT(ops, 100);
  std::remove(timeline.c_str());
}

TEST(DiagnoseCli, TimerTraceHtmlShowsTheWorkerHeatMapStagesAndFindings) {
  const TimerTrace& t = SlowWorkerTimerTrace();
  const std::string html = Temp("timer.html");
  ASSERT_EQ(RunCli("diagnose -q " + t.csv + " --meta " + t.yaml + " --html " + html).exit_code, 0);
  const std::string page = Slurp(html);
  EXPECT_NE(page.find("<h2>Straggler what-if (6 sampled step(s), 16 workers)</h2>"), std::string::npos);
  EXPECT_EQ(Count(page, "<title>dp "), 16) << "one heat-map cell per recorded worker";
  EXPECT_NE(page.find("<title>dp 2, stage 1: S_w = "), std::string::npos);
  EXPECT_EQ(Count(page, "<title>stage "), 4) << "a bar per stage";
  EXPECT_NE(page.find("<b>worker: worker (dp 2, stage 1)</b>"), std::string::npos);
  EXPECT_NE(page.find("not recorded"), std::string::npos) << "the absent TP peers, in the rank heat map";
  std::remove(html.c_str());
}

TEST(DiagnoseCli, TimerTraceInputErrorsNameTheFieldOrRow) {
  const TimerTrace& t = SlowWorkerTimerTrace();
  // The duration column missing.
  const std::string no_duration = WriteTemp("diag_cli_nodur.csv", "dp_rank,stage,rank,step,optype,start_ts\n0,0,0,1,gc,0\n");
  auto r = RunCli("diagnose " + no_duration + " --meta " + t.yaml);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("no column \"duration\""), std::string::npos) << r.err;
  EXPECT_EQ(Lines(r.err), 1) << r.err;
  // Sizes that do not match the ranks.
  const std::string small = WriteTemp("diag_cli_small.yaml", "dp_size: 2\npp_size: 4\ntp_size: 4\n");
  r = RunCli("diagnose " + t.csv + " --meta " + small);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find(" line "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("but the metadata's sizes put it on"), std::string::npos) << r.err;
  EXPECT_EQ(Lines(r.err), 1) << r.err;
  // No metadata at all.
  r = RunCli("diagnose " + t.csv);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err.rfind("megascale: error: --meta = (none): ", 0), 0u) << r.err;
}

}  // namespace
}  // namespace megascale
