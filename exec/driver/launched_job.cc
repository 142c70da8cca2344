#include "exec/driver/launched_job.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace megascale::exec {

Result<std::unique_ptr<LaunchedJob>> LaunchedJob::Start(const std::vector<std::string>& argv) {
  int out[2], err[2];
  if (::pipe(out) != 0 || ::pipe(err) != 0) return Status::IoError(std::string("cannot make a pipe: ") + std::strerror(errno));
  const pid_t pid = ::fork();
  if (pid < 0) return Status::IoError(std::string("cannot start '") + argv[0] + "': " + std::strerror(errno));
  if (pid == 0) {
    ::setpgid(0, 0);  // a group of its own: Kill ends it and what it started
    ::dup2(out[1], STDOUT_FILENO);
    ::dup2(err[1], STDERR_FILENO);
    ::close(out[0]), ::close(out[1]), ::close(err[0]), ::close(err[1]);
    std::vector<char*> args;
    for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    ::execvp(args[0], args.data());
    const std::string msg = "megascale: error: cannot start '" + argv[0] + "': " + std::strerror(errno) + "\n";
    (void)::write(STDERR_FILENO, msg.data(), msg.size());
    ::_exit(127);
  }
  ::setpgid(pid, pid);
  ::close(out[1]);
  ::close(err[1]);
  auto job = std::unique_ptr<LaunchedJob>(new LaunchedJob());
  job->pid_ = pid;
  job->out_ = out[0];
  job->err_ = err[0];
  ::fcntl(job->out_, F_SETFL, O_NONBLOCK);
  ::fcntl(job->err_, F_SETFL, O_NONBLOCK);
  return job;
}

LaunchedJob::~LaunchedJob() {
  if (!exited_ && pid_ > 0) Kill({});
  if (out_ >= 0) ::close(out_);
  if (err_ >= 0) ::close(err_);
}

std::vector<int> LaunchedJob::fds() const {
  std::vector<int> v;
  if (out_ >= 0) v.push_back(out_);
  if (err_ >= 0) v.push_back(err_);
  return v;
}

void LaunchedJob::Drain(int* fd, std::string* partial, const std::function<void(const std::string&)>& on_line) {
  char buf[4096];
  for (;;) {
    const ssize_t n = ::read(*fd, buf, sizeof(buf));
    if (n > 0) {
      partial->append(buf, static_cast<size_t>(n));
      for (size_t nl; (nl = partial->find('\n')) != std::string::npos;) {
        on_line(partial->substr(0, nl));
        partial->erase(0, nl + 1);
      }
      continue;
    }
    if (n == 0) {  // the other end closed: the last partial line, then done
      if (!partial->empty()) on_line(*partial);
      partial->clear();
      ::close(*fd);
      *fd = -1;
    }
    return;  // EAGAIN: nothing more now
  }
}

void LaunchedJob::Pump(int timeout_ms, const std::function<void(const std::string&)>& on_out,
                       const std::function<void(const std::string&)>& on_err) {
  pollfd p[2];
  int n = 0;
  if (out_ >= 0) p[n++] = {out_, POLLIN, 0};
  if (err_ >= 0) p[n++] = {err_, POLLIN, 0};
  if (n > 0) ::poll(p, n, timeout_ms);
  if (out_ >= 0) Drain(&out_, &out_partial_, on_out);
  if (err_ >= 0) Drain(&err_, &err_partial_, on_err);
}

bool LaunchedJob::Exited() {
  if (exited_) return true;
  int status = 0;
  if (::waitpid(pid_, &status, WNOHANG) != pid_) return false;
  exited_ = true;
  exit_code_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return true;
}

void LaunchedJob::Signal(int sig) {
  if (!exited_) ::kill(pid_, sig);
}

void LaunchedJob::Kill(const std::vector<long>& pids) {
  if (!exited_) ::kill(-pid_, SIGKILL);
  for (long p : pids) {
    if (p > 0) ::kill(static_cast<pid_t>(p), SIGKILL);
  }
  if (exited_) return;
  int status = 0;
  ::waitpid(pid_, &status, 0);
  exited_ = true;
  exit_code_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

}  // namespace megascale::exec
