#include "exec/runtime/heartbeat.h"

#include <netdb.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <sstream>

#include "base/steady_clock.h"
#include "planner/spec/op_kinds.h"

namespace megascale {
namespace exec {
namespace {

std::string Seconds(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g s", s);
  return buf;
}

// "op 17 (TP_ALL_REDUCE bwd)", or "no op yet".
std::string Describe(int64_t op, int kind, int phase) {
  if (kind < 0) return op < 0 ? "no op yet" : "op " + std::to_string(op);
  std::string what = OpKind_Name(static_cast<OpKind>(kind));
  if (phase >= 0) what += std::string(" ") + PhaseShortName(static_cast<Phase>(phase));
  return op < 0 ? "a " + what + " outside the plan" : "op " + std::to_string(op) + " (" + what + ")";
}

// A UDP socket connected to host:port, or -1 with *error set.
int Connect(const std::string& address, std::string* error) {
  const size_t colon = address.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == address.size()) {
    *error = "must be host:port";
    return -1;
  }
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_DGRAM;
  addrinfo* found = nullptr;
  const int rc = ::getaddrinfo(address.substr(0, colon).c_str(), address.substr(colon + 1).c_str(), &hints, &found);
  if (rc != 0) {
    *error = gai_strerror(rc);
    return -1;
  }
  int fd = -1;
  for (addrinfo* a = found; a != nullptr && fd < 0; a = a->ai_next) {
    fd = ::socket(a->ai_family, a->ai_socktype, a->ai_protocol);
    if (fd >= 0 && ::connect(fd, a->ai_addr, a->ai_addrlen) != 0) {
      ::close(fd);
      fd = -1;
    }
  }
  ::freeaddrinfo(found);
  if (fd < 0) *error = "no address of it takes a UDP socket";
  return fd;
}

}  // namespace

int RankProgress::Watch(int64_t op_id, OpKind k, Phase p) {
  for (int i = 0; i < kSlots; ++i) {
    int64_t free = -1;
    Slot& s = slots_[i];
    if (!s.since_ns.compare_exchange_strong(free, -2, std::memory_order_acq_rel)) continue;
    s.op.store(op_id, std::memory_order_relaxed);
    s.kind.store(k, std::memory_order_relaxed);
    s.phase.store(p, std::memory_order_relaxed);
    s.since_ns.store(SteadyNowNs(), std::memory_order_release);  // the reader sees it whole from here
    return i;
  }
  return -1;
}

void RankProgress::Unwatch(int slot) {
  if (slot >= 0 && slot < kSlots) slots_[slot].since_ns.store(-1, std::memory_order_release);
}

std::optional<InFlight> RankProgress::Oldest() const {
  std::optional<InFlight> oldest;
  const int64_t now = SteadyNowNs();
  for (const Slot& s : slots_) {
    const int64_t since = s.since_ns.load(std::memory_order_acquire);
    if (since < 0) continue;
    InFlight f;
    f.op = s.op.load(std::memory_order_relaxed);
    f.kind = s.kind.load(std::memory_order_relaxed);
    f.phase = s.phase.load(std::memory_order_relaxed);
    f.seconds = 1e-9 * static_cast<double>(now - since);
    // A slot freed and taken again while read names the newer op's kind with the older start at
    // worst for one look; the watchdog looks again 20 ms later before anything lasts a timeout.
    if (s.since_ns.load(std::memory_order_acquire) != since) continue;
    if (!oldest || f.seconds > oldest->seconds) oldest = f;
  }
  return oldest;
}

std::string FormatBeat(const Beat& b) {
  std::ostringstream out;
  out << "MSHB1 " << b.rank << ' ' << b.attempt << ' ' << b.pid << ' ' << b.step << ' ' << b.op << ' ' << b.kind
      << ' ' << b.ticks << ' ' << b.state << ' ' << b.trace_ns << ' ' << b.phase;
  return out.str();
}

std::optional<Beat> ParseBeat(const std::string& text) {
  std::istringstream in(text);
  std::string magic;
  Beat b;
  if (!(in >> magic >> b.rank >> b.attempt >> b.pid >> b.step >> b.op >> b.kind >> b.ticks >> b.state) ||
      magic != "MSHB1" || b.rank < 0) {
    return std::nullopt;
  }
  // Older ranks sent neither field.
  if (!(in >> b.trace_ns)) b.trace_ns = -1;
  if (!(in >> b.phase)) b.phase = -1;
  return b;
}

Result<std::unique_ptr<Heartbeat>> Heartbeat::Start(const HeartbeatOptions& options, int rank,
                                                    const RankProgress* progress) {
  int fd = -1;
  if (!options.driver.empty()) {
    std::string error;
    fd = Connect(options.driver, &error);
    if (fd < 0) return Status::BadField("--heartbeat", options.driver, error);
  }
  return std::unique_ptr<Heartbeat>(new Heartbeat(options, rank, progress, fd));
}

Heartbeat::Heartbeat(const HeartbeatOptions& options, int rank, const RankProgress* progress, int socket)
    : options_(options), rank_(rank), progress_(progress), socket_(socket) {
  thread_ = std::thread([this] { Run(); });
}

Heartbeat::~Heartbeat() {
  stop_ = true;
  if (thread_.joinable()) thread_.join();
  if (socket_ >= 0) ::close(socket_);
}

void Heartbeat::Finish(const std::string& state) {
  stop_ = true;
  if (thread_.joinable()) thread_.join();
  Send(state);
}

void Heartbeat::Send(const std::string& state, const InFlight* hung) {
  if (socket_ < 0) return;
  Beat b;
  b.rank = rank_;
  b.attempt = options_.attempt;
  b.pid = static_cast<long>(::getpid());
  b.step = progress_->step.load(std::memory_order_relaxed);
  b.op = hung != nullptr ? hung->op : progress_->op.load(std::memory_order_relaxed);
  b.kind = hung != nullptr ? hung->kind : progress_->kind.load(std::memory_order_relaxed);
  b.phase = hung != nullptr ? hung->phase : progress_->phase.load(std::memory_order_relaxed);
  b.ticks = progress_->ticks.load(std::memory_order_relaxed);
  b.state = state;
  const int64_t origin = progress_->origin_ns.load(std::memory_order_relaxed);
  if (origin >= 0) {
    b.trace_ns = SteadyNowNs() - origin;
  }
  const std::string text = FormatBeat(b);
  (void)::send(socket_, text.data(), text.size(), MSG_DONTWAIT);  // a lost beat is what beats are for
}

void Heartbeat::Run() {
  double next_beat = 0, last_change = SteadyNowSeconds();
  uint64_t last_ticks = progress_->ticks.load(std::memory_order_relaxed);
  int last_step = -2;
  while (!stop_) {
    const double now = SteadyNowSeconds();
    // Every interval, and as each step begins (the driver then knows the step a rank died in).
    const int step = progress_->step.load(std::memory_order_relaxed);
    if (now >= next_beat || step != last_step) {
      Send("run");
      next_beat = now + options_.interval_s;
      last_step = step;
    }
    const uint64_t ticks = progress_->ticks.load(std::memory_order_relaxed);
    // The watchdog counts from the first step on (building the model is not an op).
    if (ticks != last_ticks || progress_->step.load(std::memory_order_relaxed) < 0) {
      last_ticks = ticks;
      last_change = now;
    } else if (options_.collective_timeout_s > 0 && now - last_change > options_.collective_timeout_s) {
      InFlight last;
      last.op = progress_->op.load(std::memory_order_relaxed);
      last.kind = progress_->kind.load(std::memory_order_relaxed);
      last.phase = progress_->phase.load(std::memory_order_relaxed);
      last.seconds = now - last_change;
      Fire("no op started or ended for " + Seconds(last.seconds) + " after " +
               Describe(last.op, last.kind, last.phase) + " began",
           last);
    }
    if (options_.collective_timeout_s > 0) {
      const std::optional<InFlight> oldest = progress_->Oldest();
      if (oldest && oldest->seconds > options_.collective_timeout_s) {
        Fire(Describe(oldest->op, oldest->kind, oldest->phase) + " has not completed in " + Seconds(oldest->seconds),
             *oldest);
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

void Heartbeat::Fire(const std::string& why, const InFlight& op) {
  Send("watchdog", &op);
  std::fprintf(stderr,
               "megascale: error: rank %d, step %d: %s (sim.collective_timeout_s = %.3g s): a peer is dead or hung; "
               "ending the job\n",
               rank_, progress_->step.load(), why.c_str(), options_.collective_timeout_s);
  std::fflush(stderr);
  ::_exit(kWatchdogExit);
}

}  // namespace exec
}  // namespace megascale
