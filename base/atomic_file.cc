#include "base/atomic_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <sstream>
#include <vector>

#include "base/signal_cleanup.h"

namespace megascale {
namespace {

// The process's umask, read once (reading it means setting it: done before any thread needs it).
mode_t ProcessUmask() {
  static const mode_t mask = [] {
    const mode_t m = ::umask(022);
    ::umask(m);
    return m;
  }();
  return mask;
}

}  // namespace

AtomicFile::AtomicFile(std::string path) : path_(std::move(path)) {}

AtomicFile::~AtomicFile() {
  if (!committed_ && !tmp_path_.empty()) {
    if (out_.is_open()) out_.close();
    std::remove(tmp_path_.c_str());
  }
}

Status AtomicFile::Open(bool binary) {
  // A name no file has (mkstemp creates it), so no file of the user's is ever written or removed.
  std::string name = path_ + kTemporaryInfix + "XXXXXX";
  const int fd = ::mkstemp(name.data());
  if (fd < 0) {
    return Status::IoError("cannot write output file '" + path_ + "': " + std::strerror(errno) +
                           " (is its folder present and writable?)");
  }
  // mkstemp makes the file private (0600); an output gets the permissions any new file would.
  ::fchmod(fd, 0666 & ~ProcessUmask());
  ::close(fd);
  tmp_path_ = name;
  on_signal_ = std::make_unique<SignalCleanup>(tmp_path_);
  out_.open(tmp_path_, binary ? std::ios::out | std::ios::binary | std::ios::trunc
                              : std::ios::out | std::ios::trunc);
  if (!out_) {
    return Status::IoError("cannot write output file '" + path_ + "': " + std::strerror(errno) +
                           " (is its folder present and writable?)");
  }
  return Status::Ok();
}

int RemoveAbandonedTemporaries(const std::string& folder) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::is_directory(folder, ec)) return 0;
  const std::string mark = kTemporaryInfix;
  constexpr size_t kSuffix = 6;  // mkstemp's XXXXXX (AtomicFile::Open)
  std::vector<fs::path> abandoned;
  for (auto it = fs::recursive_directory_iterator(folder, ec); !ec && it != fs::recursive_directory_iterator();
       it.increment(ec)) {
    if (!it->is_regular_file(ec)) continue;
    const std::string name = it->path().filename().string();
    const size_t at = name.rfind(mark);
    if (at != std::string::npos && at > 0 && name.size() == at + mark.size() + kSuffix) {
      abandoned.push_back(it->path());
    }
  }
  int removed = 0;
  for (const fs::path& p : abandoned) removed += fs::remove(p, ec) ? 1 : 0;
  return removed;
}

Status AtomicFile::Commit() { return Finish(false); }

Status AtomicFile::CommitDurably() { return Finish(true); }

namespace {

// fsync of a file or folder by path; an error names it.
Status SyncPath(const std::string& path, int flags) {
  const int fd = ::open(path.c_str(), flags);
  if (fd < 0 || ::fsync(fd) != 0) {
    const std::string err = std::strerror(errno);
    if (fd >= 0) ::close(fd);
    return Status::IoError("cannot sync '" + path + "' to disk: " + err);
  }
  ::close(fd);
  return Status::Ok();
}

std::string FolderOf(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? "." : slash == 0 ? "/" : path.substr(0, slash);
}

}  // namespace

Status AtomicFile::Finish(bool durable) {
  out_.flush();
  bool good = static_cast<bool>(out_);
  out_.close();
  if (!good) {
    std::remove(tmp_path_.c_str());
    return Status::IoError("error while writing '" + path_ + "' (disk full?); nothing was written");
  }
  if (durable) {
    Status synced = SyncPath(tmp_path_, O_RDONLY);
    if (!synced.ok()) {
      std::remove(tmp_path_.c_str());
      return synced;
    }
  }
  if (std::rename(tmp_path_.c_str(), path_.c_str()) != 0) {
    std::string err = std::strerror(errno);
    std::remove(tmp_path_.c_str());
    return Status::IoError("cannot move output into place at '" + path_ + "': " + err);
  }
  committed_ = true;
  if (durable) return SyncPath(FolderOf(path_), O_RDONLY | O_DIRECTORY);
  return Status::Ok();
}

Status WriteFileAtomically(const std::string& path, const std::string& content) {
  AtomicFile f(path);
  MS_RETURN_IF_ERROR(f.Open(/*binary=*/true));
  f.stream() << content;
  return f.Commit();
}

Result<std::string> ReadFile(const std::string& path) {
  std::error_code ec;
  // A folder opens as a stream on Linux and reads as empty: say what it is instead.
  if (std::filesystem::is_directory(path, ec)) return Status::NotFound("'" + path + "' is a folder, not a file");
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::NotFound("cannot read file '" + path + "': " + std::strerror(errno));
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace megascale
