#include "exec/heartbeat.h"

#include <netdb.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <sstream>

namespace megascale {
namespace exec {
namespace {

double Now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

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

std::string FormatBeat(const Beat& b) {
  std::ostringstream out;
  out << "MSHB1 " << b.rank << ' ' << b.attempt << ' ' << b.pid << ' ' << b.step << ' ' << b.op << ' ' << b.kind
      << ' ' << b.ticks << ' ' << b.state << ' ' << b.trace_ns;
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
  if (!(in >> b.trace_ns)) b.trace_ns = -1;
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

void Heartbeat::Send(const std::string& state) {
  if (socket_ < 0) return;
  Beat b;
  b.rank = rank_;
  b.attempt = options_.attempt;
  b.pid = static_cast<long>(::getpid());
  b.step = progress_->step.load(std::memory_order_relaxed);
  b.op = progress_->op.load(std::memory_order_relaxed);
  b.kind = progress_->kind.load(std::memory_order_relaxed);
  b.ticks = progress_->ticks.load(std::memory_order_relaxed);
  b.state = state;
  const int64_t origin = progress_->origin_ns.load(std::memory_order_relaxed);
  if (origin >= 0) {
    b.trace_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
                     std::chrono::steady_clock::now().time_since_epoch())
                     .count() -
                 origin;
  }
  const std::string text = FormatBeat(b);
  (void)::send(socket_, text.data(), text.size(), MSG_DONTWAIT);  // a lost beat is what beats are for
}

void Heartbeat::Run() {
  double next_beat = 0, last_change = Now();
  uint64_t last_ticks = progress_->ticks.load(std::memory_order_relaxed);
  int last_step = -2;
  while (!stop_) {
    const double now = Now();
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
      Send("watchdog");
      const int kind = progress_->kind.load(std::memory_order_relaxed);
      std::fprintf(stderr,
                   "megascale: error: rank %d, step %d: no op started or ended for %.3g s (sim.collective_timeout_s) "
                   "after op %lld (%s) began: a peer is dead or hung; ending the job\n",
                   rank_, progress_->step.load(), options_.collective_timeout_s,
                   static_cast<long long>(progress_->op.load()),
                   kind >= 0 ? OpKind_Name(static_cast<OpKind>(kind)).c_str() : "none");
      std::fflush(stderr);
      ::_exit(kWatchdogExit);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

}  // namespace exec
}  // namespace megascale
