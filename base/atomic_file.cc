#include "base/atomic_file.h"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <sstream>

namespace megascale {

AtomicFile::AtomicFile(std::string path)
    : path_(std::move(path)), tmp_path_(path_ + ".tmp." + std::to_string(::getpid())) {}

AtomicFile::~AtomicFile() {
  if (!committed_) {
    if (out_.is_open()) out_.close();
    std::remove(tmp_path_.c_str());
  }
}

Status AtomicFile::Open(bool binary) {
  out_.open(tmp_path_, binary ? std::ios::out | std::ios::binary | std::ios::trunc
                              : std::ios::out | std::ios::trunc);
  if (!out_) {
    return Status::IoError("cannot write output file '" + path_ + "': " + std::strerror(errno) +
                           " (is its folder present and writable?)");
  }
  return Status::Ok();
}

Status AtomicFile::Commit() {
  out_.flush();
  bool good = static_cast<bool>(out_);
  out_.close();
  if (!good) {
    std::remove(tmp_path_.c_str());
    return Status::IoError("error while writing '" + path_ + "' (disk full?); nothing was written");
  }
  if (std::rename(tmp_path_.c_str(), path_.c_str()) != 0) {
    std::string err = std::strerror(errno);
    std::remove(tmp_path_.c_str());
    return Status::IoError("cannot move output into place at '" + path_ + "': " + err);
  }
  committed_ = true;
  return Status::Ok();
}

Status WriteFileAtomically(const std::string& path, const std::string& content) {
  AtomicFile f(path);
  MS_RETURN_IF_ERROR(f.Open(/*binary=*/true));
  f.stream() << content;
  return f.Commit();
}

Result<std::string> ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::NotFound("cannot read file '" + path + "': " + std::strerror(errno));
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace megascale
