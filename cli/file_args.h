// The files a command reads and writes, checked before any work starts, so that a bad path costs
// nothing and no file the user did not name as an output is ever written, replaced or deleted.
// Every failure is InvalidInput "<field> = '<path>': <rule>" (exit code 2). Thread-safe.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "base/signal_cleanup.h"
#include "base/status.h"

namespace megascale::cli {

// A flag or argument and the path it names.
using NamedPath = std::pair<std::string, std::string>;

// The file exists and is readable.
Status CheckInputFile(const std::string& field, const std::string& path);
// The path names a file (not empty, not a folder) in a folder that exists and is writable (outputs
// are written beside their target, then renamed over it).
Status CheckOutputFile(const std::string& field, const std::string& path);
// Whether `path` ends in `extension` (".svg").
bool HasExtension(const std::string& path, const std::string& extension);
// CheckOutputFile, and the path ends in one of `extensions` (".svg"): the format is chosen by it
// or fixed, so "--svg plot.png" would write SVG into a .png.
Status CheckOutputFileOfType(const std::string& field, const std::string& path,
                             const std::vector<std::string>& extensions);
// `name` as a file name: characters other than letters, digits, '.', '-' and '_' become '_' (a
// default output path built from a scenario's name, which may hold '/').
std::string FileNameOf(const std::string& name);
// The folder of `path` has room for about `bytes` more (statvfs, the space an unprivileged writer
// may use): else a BadField naming the field, what is needed and what is free. Checked up front,
// so a long run is not refused only at its end.
Status CheckOutputSpace(const std::string& field, const std::string& path, double bytes);
// Each output is none of the inputs and none of the other outputs, by path or by identity (a
// link, "./x" and "x"): writing it would destroy what the command reads or writes elsewhere.
// Empty paths are skipped.
Status CheckDistinct(const std::vector<NamedPath>& inputs, const std::vector<NamedPath>& outputs);
// A new, empty file beside `near` whose name no existing file has ("<near>.<tag>.XXXXXX"), for a
// command's own temporary output; the caller removes it.
Result<std::string> CreateTemporaryFile(const std::string& near, const std::string& tag);

// Removes a file when it goes out of scope (every return path) or the process is stopped by
// SIGINT or SIGTERM (base/signal_cleanup.h).
class RemoveOnExit {
 public:
  explicit RemoveOnExit(std::string path) : path_(std::move(path)), on_signal_(path_) {}
  ~RemoveOnExit();
  RemoveOnExit(const RemoveOnExit&) = delete;
  RemoveOnExit& operator=(const RemoveOnExit&) = delete;

 private:
  std::string path_;
  SignalCleanup on_signal_;
};

}  // namespace megascale::cli
