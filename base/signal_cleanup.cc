#include "base/signal_cleanup.h"

#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <mutex>

namespace megascale {
namespace {

constexpr int kSlots = 64;
constexpr size_t kPathBytes = 4096;
char g_paths[kSlots][kPathBytes];
std::atomic<bool> g_used[kSlots];
std::mutex g_mu;  // registrations (the handler only reads)

struct sigaction g_previous[2];  // SIGINT's and SIGTERM's handlers before ours
std::atomic<std::atomic<int>*> g_graceful{nullptr};

void OnSignal(int sig) {
  std::atomic<int>* stop = g_graceful.load();
  if (stop != nullptr) {
    int none = 0;
    if (stop->compare_exchange_strong(none, sig)) return;  // the first: the program stops itself
  }
  for (int i = 0; i < kSlots; ++i) {
    if (g_used[i].load(std::memory_order_acquire)) ::unlink(g_paths[i]);
  }
  // Then what would have happened without us: the previous handler, else the default (death).
  const struct sigaction& before = g_previous[sig == SIGINT ? 0 : 1];
  if (before.sa_handler != SIG_DFL && before.sa_handler != SIG_IGN && before.sa_handler != OnSignal &&
      !(before.sa_flags & SA_SIGINFO)) {
    before.sa_handler(sig);
    return;
  }
  if (before.sa_handler == SIG_IGN) return;
  ::signal(sig, SIG_DFL);
  ::raise(sig);
}

void Install(bool forget_previous = false) {
  const int signals[2] = {SIGINT, SIGTERM};
  for (int k = 0; k < 2; ++k) {
    struct sigaction old;
    if (::sigaction(signals[k], nullptr, &old) != 0) continue;
    if (forget_previous) {
      std::memset(&g_previous[k], 0, sizeof g_previous[k]);
      g_previous[k].sa_handler = SIG_DFL;
    }
    if (old.sa_handler == OnSignal) continue;
    if (!forget_previous) g_previous[k] = old;
    struct sigaction act;
    std::memset(&act, 0, sizeof act);
    act.sa_handler = OnSignal;
    sigemptyset(&act.sa_mask);
    ::sigaction(signals[k], &act, nullptr);
  }
}

}  // namespace

void SetGracefulStop(std::atomic<int>* flag) {
  std::lock_guard<std::mutex> lock(g_mu);
  Install();
  g_graceful.store(flag);
}

void ReassertSignalCleanup() {
  std::lock_guard<std::mutex> lock(g_mu);
  Install();
}

void TakeSignalsBack() {
  std::lock_guard<std::mutex> lock(g_mu);
  Install(/*forget_previous=*/true);
}

SignalCleanup::SignalCleanup(const std::string& path) {
  if (path.size() >= kPathBytes) return;
  std::lock_guard<std::mutex> lock(g_mu);
  Install();
  for (int i = 0; i < kSlots; ++i) {
    if (!g_used[i].load(std::memory_order_relaxed)) {
      std::memcpy(g_paths[i], path.c_str(), path.size() + 1);
      g_used[i].store(true, std::memory_order_release);
      slot_ = i;
      return;
    }
  }
}

SignalCleanup::~SignalCleanup() {
  if (slot_ < 0) return;
  std::lock_guard<std::mutex> lock(g_mu);
  g_used[slot_].store(false, std::memory_order_release);
}

}  // namespace megascale
