#include "cli/file_args.h"

#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <filesystem>

namespace megascale::cli {
namespace {

std::string Quoted(const std::string& s) { return "'" + s + "'"; }

std::string FolderOf(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? "." : (slash == 0 ? "/" : path.substr(0, slash));
}

// Two paths name one file: the same after normalization, or the same inode when both exist.
bool SameFile(const std::string& a, const std::string& b) {
  std::error_code ec;
  if (std::filesystem::exists(a, ec) && std::filesystem::exists(b, ec)) {
    return std::filesystem::equivalent(a, b, ec) && !ec;
  }
  const auto norm = [](const std::string& p) {
    return std::filesystem::absolute(std::filesystem::path(p)).lexically_normal().string();
  };
  return norm(a) == norm(b);
}

}  // namespace

Status CheckInputFile(const std::string& field, const std::string& path) {
  struct stat st;
  if (path.empty() || ::stat(path.c_str(), &st) != 0 || ::access(path.c_str(), R_OK) != 0) {
    return Status::BadField(field, Quoted(path), "no such file, or not readable");
  }
  if (S_ISDIR(st.st_mode)) return Status::BadField(field, Quoted(path), "is a folder, not a file");
  return Status::Ok();
}

bool HasExtension(const std::string& path, const std::string& extension) {
  return path.size() >= extension.size() &&
         path.compare(path.size() - extension.size(), extension.size(), extension) == 0;
}

Status CheckOutputFileOfType(const std::string& field, const std::string& path,
                             const std::vector<std::string>& extensions) {
  std::string list;
  for (const std::string& ext : extensions) {
    if (HasExtension(path, ext)) return CheckOutputFile(field, path);
    list += (list.empty() ? "" : " or ") + ext;
  }
  return Status::BadField(field, Quoted(path), "must end in " + list);
}

std::string FileNameOf(const std::string& name) {
  std::string out = name;
  for (char& c : out) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '-' && c != '_') c = '_';
  }
  return out;
}

Status CheckOutputFile(const std::string& field, const std::string& path) {
  if (path.empty()) return Status::BadField(field, "''", "must name a file");
  struct stat st;
  if (path.back() == '/' || (::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode))) {
    return Status::BadField(field, Quoted(path), "is a folder; name a file in it");
  }
  const std::string dir = FolderOf(path);
  if (::access(dir.c_str(), W_OK | X_OK) != 0) {
    return Status::BadField(field, Quoted(path), "its folder '" + dir + "' does not exist or is not writable");
  }
  return Status::Ok();
}

Status CheckOutputSpace(const std::string& field, const std::string& path, double bytes) {
  struct statvfs fs;
  if (::statvfs(FolderOf(path).c_str(), &fs) != 0) return Status::Ok();  // unknown: the writes will say
  const double free_bytes = static_cast<double>(fs.f_bavail) * static_cast<double>(fs.f_frsize);
  if (bytes <= free_bytes) return Status::Ok();
  char why[160];
  std::snprintf(why, sizeof(why), "needs about %.3g MB and its folder has %.3g MB free", bytes / 1e6,
                free_bytes / 1e6);
  return Status::BadField(field, Quoted(path), why);
}

Status CheckDistinct(const std::vector<NamedPath>& inputs, const std::vector<NamedPath>& outputs) {
  for (size_t i = 0; i < outputs.size(); ++i) {
    const auto& [field, path] = outputs[i];
    if (path.empty()) continue;
    for (const auto& [in_field, in_path] : inputs) {
      if (!in_path.empty() && SameFile(path, in_path)) {
        return Status::BadField(field, Quoted(path), "is the input " + in_field + "; writing it would destroy it");
      }
    }
    for (size_t j = 0; j < i; ++j) {
      if (!outputs[j].second.empty() && SameFile(path, outputs[j].second)) {
        return Status::BadField(field, Quoted(path), "is also " + outputs[j].first + "; give each output its own file");
      }
    }
  }
  return Status::Ok();
}

Result<std::string> CreateTemporaryFile(const std::string& near, const std::string& tag) {
  std::string name = near + "." + tag + ".XXXXXX";
  const int fd = ::mkstemp(name.data());
  if (fd < 0) return Status::IoError("cannot create a temporary file beside '" + near + "'");
  ::close(fd);  // private (0600): it is the command's own, removed before it exits
  return name;
}

RemoveOnExit::~RemoveOnExit() { std::remove(path_.c_str()); }

}  // namespace megascale::cli
