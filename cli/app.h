// The megascale command line: one table of subcommands and flags (CLI11), so help and parser
// cannot drift apart. Returns the process exit code: 0 success, 2 bad input (scenario, flags,
// missing file), 1 any other error.
#pragma once

namespace megascale::cli {

int Main(int argc, char** argv);

}  // namespace megascale::cli
