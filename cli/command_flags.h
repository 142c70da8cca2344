// Every subcommand's flags (CLI11), bound to its Args (cli/commands.h) and to what runs it: the
// one table help and parser are made from. Not thread-safe (call once, from main).
#pragma once

#include <functional>
#include <vector>

#include <CLI/CLI.hpp>

#include "base/status.h"

namespace megascale::cli {

struct Command {
  CLI::App* app = nullptr;        // the subcommand, owned by the App it was added to
  std::function<Status()> run;    // runs it on the flags the parse filled in
  bool rank0_prints = false;      // under mpirun every rank runs it: rank 0 alone prints its error
};

// Adds every subcommand to `app`, in the order `megascale --help` lists them.
std::vector<Command> AddCommands(CLI::App* app);

}  // namespace megascale::cli
