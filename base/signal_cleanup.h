// Files to remove if the process is stopped by SIGINT or SIGTERM while it writes them: a command's
// temporary outputs (AtomicFile's, simulate's temporary trace). A registration installs handlers
// for both signals that unlink every registered file, then do what was done before them (the
// handler they replaced, else the default: the process dies of the signal). A library that takes
// the signals over later (SimGrid's engine does) is chained the same way by
// ReassertSignalCleanup(). Registration is thread-safe; the handler is async-signal-safe (it only
// reads fixed buffers and calls unlink). At most 64 files at once: a registration beyond that is not
// protected (protected_now() says so).
#pragma once

#include <atomic>
#include <string>

namespace megascale {

// Puts the cleanup handlers back in front of whatever took SIGINT or SIGTERM since.
void ReassertSignalCleanup();
// The same, forgetting the handlers they replace: after the cleanup the process dies of the
// signal (exit 128 + n). For a library whose handler would do what a user's Ctrl-C should not
// (SimGrid's prints every actor's state and exits 1, "Skipping cleanups").
void TakeSignalsBack();

// A program that can stop cleanly (megascale run: it ends at the next step boundary, its outputs
// closed): while `flag` is set, the first SIGINT or SIGTERM only stores its number in *flag (and
// nothing is removed); a second one does what the first would do without it. nullptr: back to
// that. Installs the handlers. Not owned; it must outlive the setting.
void SetGracefulStop(std::atomic<int>* flag);

class SignalCleanup {
 public:
  explicit SignalCleanup(const std::string& path);  // registers
  ~SignalCleanup();                                  // unregisters (does not remove the file)
  SignalCleanup(const SignalCleanup&) = delete;
  SignalCleanup& operator=(const SignalCleanup&) = delete;
  bool protected_now() const { return slot_ >= 0; }

 private:
  int slot_ = -1;
};

}  // namespace megascale
