// RFC 4180 CSV text as rows of named cells: the reference files' reader (../shared/reference,
// tests/planner/data). Whole text in memory: for files of a few thousand rows, not for traces
// (traces/timer_rows.h streams those). Pure functions; thread-safe.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "base/status.h"

namespace megascale {

// One row, by the header's column names.
using CsvRow = std::map<std::string, std::string>;

// Parses CSV text with a header line: quoted fields (commas, newlines and doubled quotes inside),
// CRLF or LF line ends, blank trailing lines ignored. InvalidInput naming `what` and the line for
// an unterminated quote, a missing header or a row whose field count differs from the header's.
Result<std::vector<CsvRow>> ParseCsv(const std::string& text, const std::string& what);

// ParseCsv of a file's text; NotFound names the path when it is missing.
Result<std::vector<CsvRow>> ReadCsvFile(const std::string& path);

}  // namespace megascale
