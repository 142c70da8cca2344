#include "traces/report/chrome_export.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "base/atomic_file.h"
#include "tests/traces/trace_builders.h"

namespace megascale {
namespace {

using namespace testing_traces;

// tp 2, pp 2, dp 1: rank 3 is (tp 1, dp 0, pp 1) in TP-DP-PP order.
std::vector<TraceEvent> Events() {
  std::vector<TraceEvent> ev;
  TraceEvent gemm = Ev(3, 1, FFN_UP_GEMM, COMPUTE, 1234, 1234 + 2500500);  // 1.234 us, 2500.5 us
  gemm.set_phase(FORWARD);
  gemm.set_microbatch(3);
  gemm.set_layer(12);
  gemm.set_op_id(77);
  gemm.set_flops(2e12);
  gemm.set_bytes(1e6);
  gemm.set_collective_seq(0);
  ev.push_back(gemm);
  ev.push_back(Ev(3, 1, TP_ALL_GATHER, TP_COMM, 5000, 9000));
  ev.push_back(Ev(3, 1, FFN_DOWN_GEMM, COMPUTE, 2600000, 2700000));
  ev.push_back(Ev(0, 1, PP_SEND, PP_SEND_LANE, 0, 999));
  ev.push_back(Ev(0, 1, QKV_GEMM, COMPUTE, 0, 1));
  ev.push_back(Ev(1, 1, DP_ALL_REDUCE, DP_COMM, 10, 20));
  return ev;
}

nlohmann::json Export(const std::vector<TraceEvent>& events, const std::vector<RankStatus>& st) {
  const std::string trace = TempPath("chrome.trace");
  const std::string json = TempPath("chrome.json");
  WriteTraceFile(trace, Header(2, 2, 1), events, st);
  Status s = ExportChromeTrace(trace, json);
  EXPECT_TRUE(s.ok()) << s.message();
  Result<std::string> text = ReadFile(json);
  EXPECT_TRUE(text.ok());
  std::remove(trace.c_str());
  std::remove(json.c_str());
  return nlohmann::json::parse(text.ok() ? *text : "{}");  // throws (fails the test) if invalid
}

TEST(ChromeExport, OneProcessPerRankAndOneThreadPerLaneSeen) {
  RankStatus lost;
  lost.set_rank(2);  // a rank seen only through a status still gets its track
  lost.set_kind(RankStatus::HEARTBEAT_LOST);
  lost.set_time_ns(3000);
  nlohmann::json j = Export(Events(), {lost});
  std::map<int, std::string> process_names;
  std::map<int, int> process_sort;
  std::set<std::pair<int, int>> threads;
  int process_name_events = 0;
  for (const auto& e : j["traceEvents"]) {
    if (e["ph"] != "M") continue;
    if (e["name"] == "process_name") {
      ++process_name_events;
      process_names[e["pid"]] = e["args"]["name"];
    } else if (e["name"] == "process_sort_index") {
      process_sort[e["pid"]] = e["args"]["sort_index"];
    } else if (e["name"] == "thread_name") {
      EXPECT_TRUE(threads.emplace(e["pid"].get<int>(), e["tid"].get<int>()).second);
    }
  }
  EXPECT_EQ(process_name_events, 4);  // ranks 0, 1, 2, 3: one each
  EXPECT_EQ(process_names[3], "rank 3 (tp 1, dp 0, pp 1)");
  EXPECT_EQ(process_names[0], "rank 0 (tp 0, dp 0, pp 0)");
  EXPECT_EQ(process_sort[3], 3);
  const std::set<std::pair<int, int>> expected = {
      {3, COMPUTE}, {3, TP_COMM}, {0, PP_SEND_LANE}, {0, COMPUTE}, {1, DP_COMM}};
  EXPECT_EQ(threads, expected);
}

TEST(ChromeExport, CompleteEventsCarryMicrosecondsAndArgs) {
  nlohmann::json j = Export(Events(), {});
  int complete = 0;
  bool found_gemm = false;
  for (const auto& e : j["traceEvents"]) {
    if (e["ph"] != "X") continue;
    ++complete;
    if (e["name"] == "FFN_UP_GEMM fwd mb3 L12") {
      found_gemm = true;
      // Sub-microsecond precision kept: 1234 ns = 1.234 us; 2,500,500 ns = 2500.5 us.
      EXPECT_DOUBLE_EQ(e["ts"].get<double>(), 1.234);
      EXPECT_DOUBLE_EQ(e["dur"].get<double>(), 2500.5);
      EXPECT_EQ(e["pid"], 3);
      EXPECT_EQ(e["tid"], static_cast<int>(COMPUTE));
      EXPECT_EQ(e["args"]["step"], 1);
      EXPECT_EQ(e["args"]["op_id"], 77);
      EXPECT_DOUBLE_EQ(e["args"]["flops"].get<double>(), 2e12);
      EXPECT_DOUBLE_EQ(e["args"]["bytes"].get<double>(), 1e6);
      EXPECT_EQ(e["args"]["microbatch"], 3);
      EXPECT_EQ(e["args"]["layer"], 12);
      EXPECT_EQ(e["args"]["collective_seq"], 0);
    }
    if (e["name"] == "PP_SEND fwd") {
      EXPECT_DOUBLE_EQ(e["dur"].get<double>(), 0.999);
    }
  }
  EXPECT_EQ(complete, 6);
  EXPECT_TRUE(found_gemm);
}

TEST(ChromeExport, StatusesBecomeInstantEventsOnTheirRank) {
  RankStatus timeout;
  timeout.set_rank(1);
  timeout.set_kind(RankStatus::OP_TIMEOUT);
  timeout.set_time_ns(7500);
  timeout.set_detail("waited \"forever\"");  // needs escaping
  nlohmann::json j = Export(Events(), {timeout});
  int instants = 0;
  for (const auto& e : j["traceEvents"]) {
    if (e["ph"] != "i") continue;
    ++instants;
    EXPECT_EQ(e["name"], "OP_TIMEOUT");
    EXPECT_EQ(e["pid"], 1);
    EXPECT_DOUBLE_EQ(e["ts"].get<double>(), 7.5);
    EXPECT_EQ(e["args"]["detail"], "waited \"forever\"");
  }
  EXPECT_EQ(instants, 1);
}

TEST(ChromeExport, BadTraceLeavesNoJson) {
  const std::string json = TempPath("never.json");
  Status s = ExportChromeTrace(TempPath("missing.trace"), json);
  EXPECT_EQ(s.code(), Status::Code::kNotFound);
  EXPECT_FALSE(std::filesystem::exists(json));

  // A trace cut mid-record: the export fails and its half-written JSON never appears.
  const std::string trace = TempPath("cut.trace");
  WriteTraceFile(trace, Header(2, 2, 1), Events());
  std::filesystem::resize_file(trace, std::filesystem::file_size(trace) - 3);
  s = ExportChromeTrace(trace, json);
  EXPECT_EQ(s.code(), Status::Code::kInvalidInput);
  EXPECT_FALSE(std::filesystem::exists(json));
  std::remove(trace.c_str());
}

}  // namespace
}  // namespace megascale
