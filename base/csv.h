// RFC 4180 CSV text as rows of named cells: the reference files' reader (../shared/reference,
// tests/planner/data). Whole text in memory: for files of a few thousand rows, not for traces
// (traces/import/timer_rows.h streams those). Pure functions; thread-safe.
#pragma once

#include <cstdint>
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

// One cell read as a number, the one reading every rule then uses. `row` names the row in
// messages ("calibration.csv row 3 (GPT-1.7B)"). An empty cell is `unstated` (returned as is);
// any other must be the whole cell: CsvWhole a decimal integer in [min, max] ("1e3" and "0x10" are
// refused, not misread), CsvNumber a finite number > `above`. InvalidInput naming the row, the
// column, the value and the rule; and for a column the row does not have.
Result<int64_t> CsvWhole(const CsvRow& r, const std::string& col, const std::string& row, int64_t min, int64_t max,
                         int64_t unstated = 0);
Result<double> CsvNumber(const CsvRow& r, const std::string& col, const std::string& row, double above,
                         double unstated = 0);

}  // namespace megascale
