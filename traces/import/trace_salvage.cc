#include "traces/import/trace_salvage.h"

#include <dirent.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>

#include "base/atomic_file.h"
#include "traces/format/trace_io.h"
#include "traces/import/trace_import.h"

namespace megascale {

std::vector<std::string> TemporaryFilesOf(const std::string& path) {
  const size_t slash = path.rfind('/');
  const std::string folder = slash == std::string::npos ? "." : path.substr(0, slash);
  const std::string prefix = (slash == std::string::npos ? path : path.substr(slash + 1)) + kTemporaryInfix;
  std::vector<std::string> found;
  if (DIR* d = ::opendir(folder.c_str())) {
    while (const dirent* e = ::readdir(d)) {
      const std::string name = e->d_name;
      if (name.compare(0, prefix.size(), prefix) == 0) found.push_back(folder + "/" + name);
    }
    ::closedir(d);
  }
  std::sort(found.begin(), found.end());
  return found;
}

namespace {

// Copies the reader's records up to its first torn one, then `statuses` and a RunEnd saying the
// run failed, into a whole trace at `to`. A corrupt record (not a cut one) ends the copy too, or,
// when `strict`, fails it with the reader's error and leaves no file.
Result<SalvagedTrace> Copy(TraceReader* reader, const std::string& to, const std::vector<RankStatus>& statuses,
                           int64_t end_ns, bool strict) {
  MS_ASSIGN_OR_RETURN(std::unique_ptr<TraceFileWriter> writer, TraceFileWriter::Create(to));
  writer->OnHeader(reader->header());
  SalvagedTrace out;
  int64_t last_end = 0;
  TraceRecord record;
  for (;;) {
    Result<bool> got = reader->Next(&record);
    if (!got.ok()) {
      if (strict && !reader->torn()) return got.status();  // corrupt, not cut: the writer is dropped unclosed
      out.torn = true;
      out.torn_at = reader->offset();
      break;
    }
    if (!*got) break;
    if (record.has_event()) {
      out.last_step = std::max(out.last_step, record.event().step());
      last_end = std::max(last_end, record.event().end_ns());
      writer->OnEvent(record.event());
    } else if (record.has_status()) {
      writer->OnStatus(record.status());
    } else if (record.has_end()) {
      out.had_end = true;
      writer->OnEnd(record.end());
    }
  }
  for (const RankStatus& s : statuses) writer->OnStatus(s);
  if (!out.had_end) {
    RunEnd end;
    end.set_steps_completed(out.last_step + (out.torn ? 0 : 1));  // a torn write may have cut its last step
    end.set_failed(true);
    end.set_end_ns(end_ns >= 0 ? end_ns : last_end);
    writer->OnEnd(end);
  }
  MS_RETURN_IF_ERROR(writer->Close());
  return out;
}

}  // namespace

Status SalvageTrace(const std::string& path, const std::vector<RankStatus>& statuses, int64_t end_ns) {
  const std::vector<std::string> temporary = TemporaryFilesOf(path);
  if (temporary.empty()) return Status::NotFound("no temporary trace of '" + path + "' was left");
  Result<std::unique_ptr<TraceReader>> reader = TraceReader::Open(temporary.back());
  if (!reader.ok()) {  // not even a header was flushed: nothing to keep
    for (const std::string& t : temporary) std::remove(t.c_str());
    return reader.status();
  }
  MS_RETURN_IF_ERROR(Copy(reader->get(), path, statuses, end_ns, /*strict=*/false).status());
  for (const std::string& t : temporary) std::remove(t.c_str());
  return Status::Ok();
}

Result<SalvagedTrace> WholeTraceOf(const std::string& from, const std::string& to) {
  MS_ASSIGN_OR_RETURN(std::unique_ptr<TraceReader> reader, TraceReader::Open(from));
  return Copy(reader.get(), to, {}, -1, /*strict=*/true);
}

std::unique_ptr<TornTraceCopy> TornTraceCopy::Of(const TraceInput& input) {
  Result<TraceFormat> detected = DetectTraceFormat(input.path);
  const bool ours = input.format == TraceFormat::kNative ||
                    (input.format == TraceFormat::kAuto && detected.ok() && *detected == TraceFormat::kNative);
  if (!ours) return nullptr;
  std::string whole = (std::filesystem::temp_directory_path() / "megascale-whole-trace-XXXXXX").string();
  const int fd = ::mkstemp(whole.data());
  if (fd < 0) return nullptr;
  ::close(fd);
  Result<SalvagedTrace> salvaged = WholeTraceOf(input.path, whole);
  if (!salvaged.ok() || !salvaged->torn) {
    std::remove(whole.c_str());
    return nullptr;
  }
  TraceInput copy = input;
  copy.path = whole;
  copy.format = TraceFormat::kNative;
  return std::unique_ptr<TornTraceCopy>(new TornTraceCopy(input, std::move(copy), salvaged->torn_at));
}

TornTraceCopy::TornTraceCopy(TraceInput original, TraceInput copy, int64_t torn_at)
    : original_(std::move(original)), copy_(std::move(copy)), torn_at_(torn_at) {}

TornTraceCopy::~TornTraceCopy() { std::remove(copy_.path.c_str()); }

std::string TornTraceCopy::Note(const std::string& what_was_done) const {
  return "'" + original_.path + "' ends inside a record at byte " + std::to_string(torn_at_) +
         " (its writer was killed mid-write): " + what_was_done;
}

std::string TornTraceCopy::Named(std::string text) const {
  for (size_t at = text.find(copy_.path); at != std::string::npos; at = text.find(copy_.path, at)) {
    text.replace(at, copy_.path.size(), original_.path);
    at += original_.path.size();
  }
  return text;
}

}  // namespace megascale
