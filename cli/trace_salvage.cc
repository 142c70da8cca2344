#include "cli/trace_salvage.h"

#include <dirent.h>

#include <algorithm>
#include <cstdio>

#include "traces/trace_io.h"

namespace megascale::cli {

std::vector<std::string> TemporaryFilesOf(const std::string& path) {
  const size_t slash = path.rfind('/');
  const std::string folder = slash == std::string::npos ? "." : path.substr(0, slash);
  const std::string prefix = (slash == std::string::npos ? path : path.substr(slash + 1)) + ".tmp.";
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

Status SalvageTrace(const std::string& path, const std::vector<RankStatus>& statuses, int64_t end_ns) {
  const std::vector<std::string> temporary = TemporaryFilesOf(path);
  if (temporary.empty()) return Status::NotFound("no temporary trace of '" + path + "' was left");
  Result<std::unique_ptr<TraceReader>> reader = TraceReader::Open(temporary.back());
  if (!reader.ok()) {  // not even a header was flushed: nothing to keep
    for (const std::string& t : temporary) std::remove(t.c_str());
    return reader.status();
  }
  MS_ASSIGN_OR_RETURN(std::unique_ptr<TraceFileWriter> writer, TraceFileWriter::Create(path));
  writer->OnHeader((*reader)->header());
  int last_step = -1;
  bool torn = false;
  TraceRecord record;
  for (;;) {
    Result<bool> got = (*reader)->Next(&record);
    torn = !got.ok();
    if (!got.ok() || !*got) break;  // the end, or the record the kill tore: kept up to it
    if (record.has_event()) {
      last_step = std::max(last_step, record.event().step());
      writer->OnEvent(record.event());
    } else if (record.has_status()) {
      writer->OnStatus(record.status());
    }
  }
  for (const RankStatus& s : statuses) writer->OnStatus(s);
  RunEnd end;
  end.set_steps_completed(last_step + (torn ? 0 : 1));  // a torn write may have cut its last step
  end.set_failed(true);
  end.set_end_ns(end_ns);
  writer->OnEnd(end);
  MS_RETURN_IF_ERROR(writer->Close());
  for (const std::string& t : temporary) std::remove(t.c_str());
  return Status::Ok();
}

}  // namespace megascale::cli
