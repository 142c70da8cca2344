#include "traces/format/trace_io.h"

#include <google/protobuf/util/message_differencer.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "tests/traces/trace_builders.h"

namespace megascale {
namespace {

using google::protobuf::util::MessageDifferencer;
using namespace testing_traces;

TraceHeader FullHeader() {
  TraceHeader h = Header(8, 4, 2);
  h.set_virtual_stages(2);
  h.set_rank_order(TP_PP_DP);
  h.set_gpus_per_node(8);
  h.set_peak_flops_per_gpu(312e12);
  h.set_model_flops_per_step(1.5e18);
  h.set_hardware_flops_per_step(1.9e18);
  h.set_tokens_per_step(6144 * 2048);
  h.set_steps(3);
  h.set_gpu("A100-80GB");
  return h;
}

TraceEvent FullEvent(int i) {
  TraceEvent e = Ev(i % 64, i / 100, FFN_UP_GEMM, COMPUTE, 1000 * i, 1000 * i + 777);
  e.set_op_id(i);
  e.set_phase(BACKWARD);
  e.set_group(TP_GROUP);
  e.set_flops(1.25e12 + i);
  e.set_bytes(3.5e8);
  e.set_collective_seq(i * 3);
  e.set_microbatch(i % 7);
  e.set_chunk(1);
  e.set_layer(i % 96);
  e.set_stage(2);
  return e;
}

std::vector<RankStatus> AllStatuses() {
  std::vector<RankStatus> out;
  for (int k = RankStatus::HEARTBEAT_LOST; k <= RankStatus::OP_FAILED; ++k) {
    RankStatus s;
    s.set_rank(10 + k);
    s.set_kind(static_cast<RankStatus::Kind>(k));
    s.set_time_ns(5000000000LL + k);
    s.set_last_heartbeat_ns(4000000000LL);
    s.set_op_id(42);
    s.set_step(1);
    s.set_detail("peer unreachable: \"rank 3\"");
    out.push_back(s);
  }
  return out;
}

int64_t FileSize(const std::string& path) {
  return static_cast<int64_t>(std::filesystem::file_size(path));
}

TEST(TraceIo, RoundTripsEveryRecordType) {
  const std::string path = TempPath("roundtrip.trace");
  std::vector<TraceEvent> events;
  for (int i = 0; i < 300; ++i) events.push_back(FullEvent(i));
  events.push_back(Ev(3, 0, PP_RECV, PP_RECV_LANE, 5, 9));  // optional fields left unset
  RunEnd end;
  end.set_steps_completed(2);
  end.set_failed(true);
  end.set_end_ns(123456789);
  WriteTraceFile(path, FullHeader(), events, AllStatuses(), &end);

  Result<Trace> trace = ReadTrace(path);
  ASSERT_TRUE(trace.ok()) << trace.status().message();
  EXPECT_TRUE(MessageDifferencer::Equals(trace->header, FullHeader()));
  ASSERT_EQ(trace->events.size(), events.size());
  for (size_t i = 0; i < events.size(); ++i) {
    EXPECT_TRUE(MessageDifferencer::Equals(trace->events[i], events[i])) << "event " << i;
  }
  ASSERT_EQ(trace->statuses.size(), 3u);
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_TRUE(MessageDifferencer::Equals(trace->statuses[i], AllStatuses()[i]));
  }
  ASSERT_TRUE(trace->has_end);
  EXPECT_TRUE(MessageDifferencer::Equals(trace->end, end));
  // Unset optional fields stay unset and keep their defaults (microbatch -1 means "none").
  EXPECT_FALSE(trace->events.back().has_microbatch());
  EXPECT_EQ(trace->events.back().microbatch(), -1);
  std::remove(path.c_str());
}

// The writer's hand-framed records must be exactly protobuf's delimited TraceRecords.
TEST(TraceIo, FileIsTheDelimitedTraceRecordStream) {
  const std::string path = TempPath("framing.trace");
  WriteTraceFile(path, FullHeader(), {FullEvent(7)});
  std::string expected;
  for (int i = 0; i < 2; ++i) {
    TraceRecord r;
    if (i == 0) *r.mutable_header() = FullHeader();
    else *r.mutable_event() = FullEvent(7);
    const std::string body = r.SerializeAsString();
    ASSERT_LT(body.size(), 128u);  // one-byte varint prefix below
    expected.push_back(static_cast<char>(body.size()));
    expected += body;
  }
  Result<std::string> bytes = ReadFile(path);
  ASSERT_TRUE(bytes.ok());
  EXPECT_EQ(*bytes, expected);
  std::remove(path.c_str());
}

class RecordingSink : public TraceSink {
 public:
  void OnHeader(const TraceHeader&) override { order += 'H'; }
  void OnEvent(const TraceEvent&) override { order += 'E'; }
  void OnStatus(const RankStatus&) override { order += 'S'; }
  void OnEnd(const RunEnd&) override { order += 'R'; }
  std::string order;
};

TEST(TraceIo, ReplayKeepsTheFileOrderAndToleratesAMissingEnd) {
  const std::string path = TempPath("replay.trace");
  auto writer = TraceFileWriter::Create(path);
  ASSERT_TRUE(writer.ok());
  (*writer)->OnHeader(FullHeader());
  (*writer)->OnEvent(FullEvent(1));
  (*writer)->OnStatus(AllStatuses()[0]);
  (*writer)->OnEvent(FullEvent(2));
  ASSERT_TRUE((*writer)->Close().ok());
  EXPECT_EQ((*writer)->records_written(), 4);
  (*writer)->OnEvent(FullEvent(3));  // after Close(): dropped
  EXPECT_EQ((*writer)->records_written(), 4);

  RecordingSink sink;
  ASSERT_TRUE(ReplayTrace(path, &sink).ok());
  EXPECT_EQ(sink.order, "HESE");
  std::remove(path.c_str());
}

TEST(TraceIo, NoFileAppearsUntilCloseSucceeds) {
  const std::string path = TempPath("unclosed.trace");
  std::remove(path.c_str());
  {
    auto writer = TraceFileWriter::Create(path);
    ASSERT_TRUE(writer.ok());
    (*writer)->OnHeader(FullHeader());
    for (int i = 0; i < 50000; ++i) (*writer)->OnEvent(FullEvent(i));  // > one write block
    EXPECT_FALSE(std::filesystem::exists(path));
  }  // destroyed without Close()
  EXPECT_FALSE(std::filesystem::exists(path));
  // Nor is a temporary left beside it.
  const std::string prefix = std::filesystem::path(path).filename().string();
  for (const auto& entry : std::filesystem::directory_iterator(::testing::TempDir())) {
    EXPECT_NE(entry.path().filename().string().rfind(prefix, 0), 0u) << entry.path();
  }
}

TEST(TraceIo, CloseWithoutAHeaderFirstWritesNothing) {
  const std::string path = TempPath("headerless.trace");
  auto writer = TraceFileWriter::Create(path);
  ASSERT_TRUE(writer.ok());
  (*writer)->OnEvent(FullEvent(1));
  (*writer)->OnHeader(FullHeader());
  Status closed = (*writer)->Close();
  EXPECT_EQ(closed.code(), Status::Code::kInvalidInput);
  EXPECT_NE(closed.message().find("header"), std::string::npos) << closed.message();
  EXPECT_FALSE(std::filesystem::exists(path));
}

TEST(TraceIo, TruncatedFileNamesTheOffsetOfTheCutRecord) {
  // The cut record starts where a trace holding only the records before it ends.
  const std::string prefix_path = TempPath("prefix.trace");
  const std::string path = TempPath("truncated.trace");
  std::vector<TraceEvent> events = {FullEvent(1), FullEvent(2), FullEvent(3)};
  WriteTraceFile(prefix_path, FullHeader(), {events[0], events[1]});
  WriteTraceFile(path, FullHeader(), events);
  const int64_t cut_offset = FileSize(prefix_path);
  std::filesystem::resize_file(path, FileSize(path) - 5);

  Result<Trace> trace = ReadTrace(path);
  ASSERT_FALSE(trace.ok());
  EXPECT_EQ(trace.status().code(), Status::Code::kInvalidInput);
  EXPECT_NE(trace.status().message().find("byte offset " + std::to_string(cut_offset)),
            std::string::npos)
      << trace.status().message();
  EXPECT_NE(trace.status().message().find(path), std::string::npos);
  std::remove(prefix_path.c_str());
  std::remove(path.c_str());
}

TEST(TraceIo, CorruptRecordNamesItsOffset) {
  const std::string header_path = TempPath("header_only.trace");
  WriteTraceFile(header_path, FullHeader(), {});
  const int64_t bad_offset = FileSize(header_path);
  Result<std::string> bytes = ReadFile(header_path);
  ASSERT_TRUE(bytes.ok());

  // A 3-byte record whose event field claims 127 bytes: not a parseable TraceRecord.
  const std::string path = TempPath("corrupt.trace");
  std::string corrupt = *bytes + std::string("\x03\x12\x7f\x00", 4) + std::string(200, '\x00');
  ASSERT_TRUE(WriteFileAtomically(path, corrupt).ok());
  Result<Trace> trace = ReadTrace(path);
  ASSERT_FALSE(trace.ok());
  EXPECT_EQ(trace.status().code(), Status::Code::kInvalidInput);
  EXPECT_NE(trace.status().message().find("byte offset " + std::to_string(bad_offset)),
            std::string::npos)
      << trace.status().message();

  // An absurd size prefix is rejected before anything is allocated for it.
  ASSERT_TRUE(WriteFileAtomically(path, *bytes + std::string("\xff\xff\xff\xff\x0f", 5)).ok());
  trace = ReadTrace(path);
  ASSERT_FALSE(trace.ok());
  EXPECT_NE(trace.status().message().find("byte offset " + std::to_string(bad_offset)),
            std::string::npos)
      << trace.status().message();
  std::remove(header_path.c_str());
  std::remove(path.c_str());
}

TEST(TraceIo, OpenRejectsMissingEmptyAndHeaderlessFiles) {
  Result<std::unique_ptr<TraceReader>> missing = TraceReader::Open(TempPath("no_such.trace"));
  EXPECT_EQ(missing.status().code(), Status::Code::kNotFound);
  EXPECT_NE(missing.status().message().find("no_such.trace"), std::string::npos);

  const std::string path = TempPath("odd.trace");
  ASSERT_TRUE(WriteFileAtomically(path, "").ok());
  EXPECT_EQ(TraceReader::Open(path).status().code(), Status::Code::kInvalidInput);

  TraceRecord event_first;
  *event_first.mutable_event() = FullEvent(1);
  const std::string body = event_first.SerializeAsString();
  ASSERT_TRUE(WriteFileAtomically(path, std::string(1, static_cast<char>(body.size())) + body).ok());
  Result<std::unique_ptr<TraceReader>> headerless = TraceReader::Open(path);
  EXPECT_EQ(headerless.status().code(), Status::Code::kInvalidInput);
  EXPECT_NE(headerless.status().message().find("byte offset 0"), std::string::npos);
  std::remove(path.c_str());
}

}  // namespace
}  // namespace megascale
