#include "traces/report/chrome_export.h"

#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <set>
#include <utility>

#include <google/protobuf/util/json_util.h>
#include <nlohmann/json.hpp>

#include "base/atomic_file.h"
#include "planner/spec/layout.h"
#include "traces/format/event_name.h"
#include "traces/format/trace_io.h"

namespace megascale {
namespace {

constexpr size_t kWriteBlock = 1 << 20;

// Chrome's unit is the microsecond; nanoseconds keep their precision as three decimals, printed
// from integers so no rounding creeps in.
void AppendMicros(int64_t ns, std::string* out) {
  char buf[32];
  const bool negative = ns < 0;
  const uint64_t abs_ns = negative ? 0 - static_cast<uint64_t>(ns) : static_cast<uint64_t>(ns);
  std::snprintf(buf, sizeof buf, "%s%" PRIu64 ".%03" PRIu64, negative ? "-" : "", abs_ns / 1000,
                abs_ns % 1000);
  out->append(buf);
}

// JSON has no inf or nan.
void AppendNumber(double v, std::string* out) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.9g", std::isfinite(v) ? v : 0.0);
  out->append(buf);
}

void AppendInt(int64_t v, std::string* out) { out->append(std::to_string(v)); }

// The process name shows where a rank sits, when the header carries a usable layout.
std::string ProcessName(int rank, const TraceHeader& h) {
  std::string name = "rank " + std::to_string(rank);
  if (h.tp() > 0 && h.pp() > 0 && h.dp() > 0) {
    LayoutSpec spec;
    spec.set_tp(h.tp());
    spec.set_pp(h.pp());
    spec.set_dp(h.dp());
    spec.set_rank_order(h.rank_order());
    const RankCoords c = RankLayout(spec).CoordsOf(rank);
    name += " (tp " + std::to_string(c.tp) + ", dp " + std::to_string(c.dp) + ", pp " +
            std::to_string(c.pp) + ")";
  }
  return name;
}

class ChromeWriter {
 public:
  explicit ChromeWriter(AtomicFile* file) : file_(file) { buf_.reserve(kWriteBlock + 4096); }

  // Starts the next element of the traceEvents array.
  void Begin() {
    if (!first_) buf_.push_back(',');
    first_ = false;
    buf_.push_back('\n');
  }
  std::string& buf() { return buf_; }
  void MaybeFlush() {
    if (buf_.size() >= kWriteBlock) Flush();
  }
  void Flush() {
    file_->stream().write(buf_.data(), static_cast<std::streamsize>(buf_.size()));
    buf_.clear();
  }

 private:
  AtomicFile* file_;
  std::string buf_;
  bool first_ = true;
};

void WriteEvent(const TraceEvent& e, ChromeWriter* w) {
  w->Begin();
  std::string& b = w->buf();
  b.append("{\"name\":\"");
  if (e.kind() == HOST_OP && !e.name().empty()) {
    const std::string quoted = nlohmann::json(e.name()).dump();  // a name of its own, escaped, in quotes
    b.append(quoted, 1, quoted.size() - 2);
  } else {
    AppendEventName(e, &b);  // enum names and digits only: nothing to escape
  }
  b.append("\",\"cat\":\"").append(LaneName(e.lane())).append("\",\"ph\":\"X\",\"ts\":");
  AppendMicros(e.start_ns(), &b);
  b.append(",\"dur\":");
  AppendMicros(e.end_ns() - e.start_ns(), &b);
  b.append(",\"pid\":");
  AppendInt(e.rank(), &b);
  b.append(",\"tid\":");
  AppendInt(e.lane(), &b);
  b.append(",\"args\":{\"step\":");
  AppendInt(e.step(), &b);
  b.append(",\"op_id\":");
  AppendInt(e.op_id(), &b);
  b.append(",\"flops\":");
  AppendNumber(e.flops(), &b);
  b.append(",\"bytes\":");
  AppendNumber(e.bytes(), &b);
  b.append(",\"microbatch\":");
  AppendInt(e.microbatch(), &b);
  b.append(",\"layer\":");
  AppendInt(e.layer(), &b);
  b.append(",\"chunk\":");
  AppendInt(e.chunk(), &b);
  b.append(",\"collective_seq\":");
  AppendInt(e.collective_seq(), &b);
  b.append(",\"group\":");
  AppendInt(e.group(), &b);
  if (e.has_stage()) {
    b.append(",\"stage\":");
    AppendInt(e.stage(), &b);
  }
  if (e.has_cpu_ns()) {  // the CPU device: the op's thread CPU time, in µs like ts and dur
    b.append(",\"cpu_us\":");
    AppendMicros(e.cpu_ns(), &b);
  }
  if (e.has_launch_ns()) {  // how long it queued on its lane after it was handed over (µs)
    b.append(",\"queued_us\":");
    AppendMicros(e.start_ns() - e.launch_ns(), &b);
  }
  b.append("}}");
  w->MaybeFlush();
}

// A driver observation, as an instant event on the rank's process track.
void WriteStatus(const RankStatus& s, ChromeWriter* w) {
  nlohmann::json args = {{"step", s.step()}, {"op_id", s.op_id()}, {"detail", s.detail()}};
  if (s.kind() == RankStatus::HEARTBEAT_LOST) {
    args["last_heartbeat_us"] = static_cast<double>(s.last_heartbeat_ns()) / 1e3;
  }
  if (s.has_last_op_end_ns()) args["last_op_end_us"] = static_cast<double>(s.last_op_end_ns()) / 1e3;
  if (s.has_op_kind()) args["op_kind"] = OpKind_Name(s.op_kind());
  if (s.has_group()) args["group"] = static_cast<int>(s.group());
  if (s.has_collective_seq()) args["collective_seq"] = s.collective_seq();
  w->Begin();
  std::string& b = w->buf();
  b.append("{\"name\":\"").append(RankStatus::Kind_Name(s.kind()));
  b.append("\",\"cat\":\"status\",\"ph\":\"i\",\"s\":\"p\",\"ts\":");
  AppendMicros(s.time_ns(), &b);
  b.append(",\"pid\":");
  AppendInt(s.rank(), &b);
  b.append(",\"tid\":0,\"args\":").append(args.dump()).append("}");
  w->MaybeFlush();
}

// The run's end, as a global instant: where the run stopped, and how many steps it completed.
void WriteRunEnd(const RunEnd& end, ChromeWriter* w) {
  nlohmann::json args = {{"failed", end.failed()}};
  if (end.has_steps_completed()) args["steps_completed"] = end.steps_completed();
  w->Begin();
  std::string& b = w->buf();
  b.append("{\"name\":\"run_end\",\"cat\":\"run\",\"ph\":\"i\",\"s\":\"g\",\"ts\":");
  AppendMicros(end.end_ns(), &b);
  b.append(",\"pid\":0,\"tid\":0,\"args\":").append(args.dump()).append("}");
}

void WriteMetadata(const std::string& name, int pid, const int* tid, const nlohmann::json& args,
                   ChromeWriter* w) {
  nlohmann::json m = {{"name", name}, {"ph", "M"}, {"pid", pid}, {"args", args}};
  if (tid != nullptr) m["tid"] = *tid;
  w->Begin();
  w->buf().append(m.dump());
}

}  // namespace

Status ExportChromeTrace(const std::string& trace_path, const std::string& json_path) {
  MS_ASSIGN_OR_RETURN(std::unique_ptr<TraceReader> reader, TraceReader::Open(trace_path));
  const TraceHeader& header = reader->header();
  AtomicFile file(json_path);
  MS_RETURN_IF_ERROR(file.Open());
  ChromeWriter w(&file);
  w.buf().append("{\"displayTimeUnit\":\"ns\",\"otherData\":");
  // The whole header rides along, so that trace_import.h reads the JSON back into the same trace.
  std::string header_json;
  google::protobuf::util::JsonPrintOptions json_options;
  json_options.preserve_proto_field_names = true;
  if (!google::protobuf::util::MessageToJsonString(header, &header_json, json_options).ok()) {
    header_json = "{}";
  }
  w.buf().append(nlohmann::json({{"source", header.source()},
                                 {"scenario_name", header.scenario_name()},
                                 {"world_size", header.world_size()},
                                 {"gpu", header.gpu()},
                                 {"header", nlohmann::json::parse(header_json)}})
                     .dump());
  w.buf().append(",\"traceEvents\":[");

  // Only the tracks seen are kept: O(ranks x lanes), whatever the trace's length.
  std::set<int> ranks;
  std::set<std::pair<int, int>> lanes;
  TraceRecord record;
  while (true) {
    MS_ASSIGN_OR_RETURN(bool got, reader->Next(&record));
    if (!got) break;
    if (record.has_event()) {
      const TraceEvent& e = record.event();
      ranks.insert(e.rank());
      lanes.emplace(e.rank(), e.lane());
      WriteEvent(e, &w);
    } else if (record.has_status()) {
      ranks.insert(record.status().rank());
      WriteStatus(record.status(), &w);
    } else if (record.has_end()) {
      WriteRunEnd(record.end(), &w);
    }
  }
  // Metadata last: the order of traceEvents does not matter to the viewers.
  for (int rank : ranks) {
    WriteMetadata("process_name", rank, nullptr, {{"name", ProcessName(rank, header)}}, &w);
    WriteMetadata("process_sort_index", rank, nullptr, {{"sort_index", rank}}, &w);
    w.MaybeFlush();
  }
  for (const auto& [rank, lane] : lanes) {
    WriteMetadata("thread_name", rank, &lane, {{"name", LaneName(lane)}}, &w);
    WriteMetadata("thread_sort_index", rank, &lane, {{"sort_index", lane}}, &w);
    w.MaybeFlush();
  }
  w.buf().append("\n]}\n");
  w.Flush();
  return file.Commit();
}

}  // namespace megascale
