// Runs the megascale binary as a user would, capturing exit code, stdout and stderr.
#pragma once

#include <sys/wait.h>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <unistd.h>

namespace megascale::testing {

struct CliResult {
  int exit_code = -1;
  std::string out;
  std::string err;
};

inline std::string Slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// `args` is appended to the binary path as shell words (callers quote paths they build).
inline CliResult RunCli(const std::string& args) {
  static int counter = 0;
  const std::string base = ::testing::TempDir() + "/cli_" + std::to_string(::getpid()) + "_" +
                           std::to_string(counter++);
  const std::string cmd = std::string(MEGASCALE_BINARY) + " " + args + " >" + base + ".out 2>" +
                          base + ".err";
  CliResult r;
  int status = std::system(cmd.c_str());
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.out = Slurp(base + ".out");
  r.err = Slurp(base + ".err");
  std::remove((base + ".out").c_str());
  std::remove((base + ".err").c_str());
  return r;
}

// A file of this test process's own (ctest runs tests side by side: a name shared between
// processes could be read while another rewrites it).
inline std::string WriteTemp(const std::string& name, const std::string& content) {
  const std::string path = ::testing::TempDir() + "/" + std::to_string(::getpid()) + "_" + name;
  std::ofstream(path) << content;
  return path;
}

inline bool FileExists(const std::string& path) { return ::access(path.c_str(), F_OK) == 0; }

}  // namespace megascale::testing
