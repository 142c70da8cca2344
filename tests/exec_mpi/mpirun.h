// `mpirun -np N --oversubscribe megascale ARGS`, for the tests that launch the CLI under mpirun (the
// cli suite's RunCli runs the binary alone). Needs MPIEXEC and MEGASCALE_BINARY defined (CMake).
#pragma once

#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

#include "tests/cli/cli_runner.h"

namespace megascale::testing {

inline CliResult Mpirun(int np, const std::string& args) {
  const std::string base = ::testing::TempDir() + "/mpirun_" + std::to_string(::getpid());
  const std::string cmd = std::string(MPIEXEC) + " -np " + std::to_string(np) + " --oversubscribe " +
                          MEGASCALE_BINARY + " " + args + " >" + base + ".out 2>" + base + ".err";
  const int status = std::system(cmd.c_str());
  CliResult r;
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.out = Slurp(base + ".out");
  r.err = Slurp(base + ".err");
  return r;
}

}  // namespace megascale::testing
