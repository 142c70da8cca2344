#include "cli/app.h"

#include <iostream>

#include <CLI/CLI.hpp>

#include "cli/command_flags.h"
#include "cli/commands.h"

namespace megascale::cli {
namespace {

int ExitCodeFor(const Status& s) {
  if (s.ok()) return 0;
  switch (s.code()) {
    case Status::Code::kInvalidInput:
    case Status::Code::kNotFound:
      return 2;
    case Status::Code::kStopped:
      return 128 + s.signal();
    default:
      return 1;
  }
}

// A file flag or argument given an empty path ("--trace ''") names no file: refused, not read as
// "none asked for".
Status RefuseEmptyPaths(const CLI::App& app) {
  static const char* const kPaths[] = {"scenario", "trace", "--trace", "--chrome", "--html", "--heatmap",
                                       "--timeline", "--meta", "--csv", "--svg"};
  for (const CLI::App* cmd : app.get_subcommands()) {
    for (const char* name : kPaths) {
      const CLI::Option* opt = nullptr;
      try {
        opt = cmd->get_option(name);
      } catch (const CLI::OptionNotFound&) {
        continue;
      }
      if (opt->count() == 0) continue;
      for (const std::string& value : opt->results()) {
        if (value.empty()) return Status::BadField(name, "''", "must name a file");
      }
    }
  }
  return Status::Ok();
}

// A misspelled command would otherwise read "A subcommand is required": name it and the list.
Status CheckCommandName(CLI::App& app, int argc, char** argv) {
  if (argc <= 1 || argv[1][0] == '-') return Status::Ok();
  std::string names;
  for (const CLI::App* cmd : app.get_subcommands([](const CLI::App*) { return true; })) {
    if (cmd->get_name() == argv[1]) return Status::Ok();
    names += (names.empty() ? "" : ", ") + cmd->get_name();
  }
  return Status::BadField("command", "'" + std::string(argv[1]) + "'",
                          "not a command (one of " + names + "; --help for each)");
}

}  // namespace

int Main(int argc, char** argv) {
  CLI::App app{
      "megascale: plan, simulate and diagnose LLM training at scale.\n"
      "A scenario (protobuf text format, see scenarios/) describes the model, the cluster, the\n"
      "layout and any injected faults."};
  app.require_subcommand(1);
  app.set_version_flag("--version", "megascale 0.1");
  const std::vector<Command> commands = AddCommands(&app);
  Status status = CheckCommandName(app, argc, argv);
  if (!status.ok()) {
    std::cerr << "megascale: error: " << status.message() << "\n";
    return ExitCodeFor(status);
  }

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    // Every rank of an mpirun'd `run` parses the same words: one says what was wrong, in the form
    // of every other error.
    if (PrintsRunErrors()) std::cerr << "megascale: error: " << e.what() << " (--help for the options)\n";
    return 2;
  }

  status = RefuseEmptyPaths(app);
  for (const Command& c : commands) {
    if (!status.ok() || !*c.app) continue;
    status = c.run();
    if (!status.ok() && c.rank0_prints && !PrintsRunErrors()) return ExitCodeFor(status);
  }
  if (!status.ok()) {
    std::cerr << "megascale: error: " << status.message() << "\n";
  }
  return ExitCodeFor(status);
}

}  // namespace megascale::cli
