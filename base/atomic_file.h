// Whole-file output that never leaves a partial file behind.
//
// AtomicFile writes to a new file "<path>.tmp.XXXXXX" (a name no file had) and renames it over
// <path> on Commit(). If the object is destroyed without Commit() (an error, an exception), or the
// process is stopped by SIGINT or SIGTERM meanwhile (signal_cleanup.h), the temporary file is
// removed and <path> is untouched. Not thread-safe: one writer per object.
#pragma once

#include <fstream>
#include <memory>
#include <string>

#include "base/status.h"

namespace megascale {

// What AtomicFile puts between a path and its temporary file's six random characters.
constexpr char kTemporaryInfix[] = ".tmp.";

class AtomicFile {
 public:
  explicit AtomicFile(std::string path);
  ~AtomicFile();
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;

  // Opens the temporary file; fails with a message naming the path if its folder is not writable.
  Status Open(bool binary = false);
  std::ostream& stream() { return out_; }
  // Flushes, closes and renames into place. After an error the temporary file is removed.
  Status Commit();
  // Commit, durably: the file's bytes reach the disk (fsync) before the rename, and the rename
  // itself (fsync of the folder) before it returns. For what a crash must not tear (checkpoints).
  Status CommitDurably();

  const std::string& path() const { return path_; }

 private:
  std::string path_;
  std::string tmp_path_;  // set by Open
  std::ofstream out_;
  bool committed_ = false;
  Status Finish(bool durable);
  std::unique_ptr<class SignalCleanup> on_signal_;
};

// Convenience: writes `content` to `path` atomically.
Status WriteFileAtomically(const std::string& path, const std::string& content);

// Removes the temporary files ("<name>.tmp.XXXXXX") that killed writers left under `folder`, its
// subfolders included, and returns how many. A writer killed outright (SIGKILL, or stopped and then
// killed) cannot remove its own: call this only when no writer of that folder can be running (the
// launcher, between a killed attempt and the next). A missing folder removes nothing.
int RemoveAbandonedTemporaries(const std::string& folder);

// Reads a whole file; NotFound names the path when it is missing.
Result<std::string> ReadFile(const std::string& path);

}  // namespace megascale
