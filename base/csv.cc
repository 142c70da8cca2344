#include "base/csv.h"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "base/atomic_file.h"

namespace megascale {

Result<std::vector<CsvRow>> ParseCsv(const std::string& text, const std::string& what) {
  // Each record with the line it starts on (a quoted field may span lines).
  std::vector<std::vector<std::string>> records(1, std::vector<std::string>(1));
  std::vector<size_t> starts = {1};
  size_t line = 1;
  bool quoted = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    std::string& field = records.back().back();
    if (c == '\n') ++line;
    if (quoted) {
      if (c == '"' && i + 1 < text.size() && text[i + 1] == '"') {
        field += '"';
        ++i;
      } else if (c == '"') {
        quoted = false;
      } else {
        field += c;
      }
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      records.back().emplace_back();
    } else if (c == '\n') {
      records.emplace_back(1);
      starts.push_back(line);
    } else if (c != '\r') {
      field += c;
    }
  }
  if (quoted) return Status::InvalidInput(what + " line " + std::to_string(starts.back()) + ": unterminated quoted field");
  while (!records.empty() && records.back().size() == 1 && records.back()[0].empty()) {
    records.pop_back();
  }
  if (records.empty()) return Status::InvalidInput(what + ": no header line (the file is empty)");
  const std::vector<std::string>& header = records[0];
  std::vector<CsvRow> rows;
  for (size_t i = 1; i < records.size(); ++i) {
    if (records[i].size() == 1 && records[i][0].empty()) continue;  // a blank line
    if (records[i].size() != header.size()) {
      return Status::InvalidInput(what + " line " + std::to_string(starts[i]) + ": " + std::to_string(records[i].size()) +
                                  " fields: the header line has " + std::to_string(header.size()));
    }
    CsvRow row;
    for (size_t j = 0; j < header.size(); ++j) row[header[j]] = records[i][j];
    rows.push_back(std::move(row));
  }
  return rows;
}

Result<std::vector<CsvRow>> ReadCsvFile(const std::string& path) {
  MS_ASSIGN_OR_RETURN(std::string text, ReadFile(path));
  return ParseCsv(text, path);
}

namespace {

Result<const std::string*> Cell(const CsvRow& r, const std::string& col, const std::string& row) {
  auto it = r.find(col);
  if (it == r.end()) return Status::InvalidInput(row + ": no column \"" + col + "\" (the header must name it)");
  return &it->second;
}

}  // namespace

Result<int64_t> CsvWhole(const CsvRow& r, const std::string& col, const std::string& row, int64_t min, int64_t max,
                         int64_t unstated) {
  MS_ASSIGN_OR_RETURN(const std::string* v, Cell(r, col, row));
  if (v->empty()) return unstated;
  char* end = nullptr;
  errno = 0;
  const long long x = std::strtoll(v->c_str(), &end, 10);
  if (end == v->c_str() || *end != '\0' || errno != 0 || x < min || x > max) {
    return Status::InvalidInput(row + ": " + col + " = \"" + *v + "\": must be a whole number in [" +
                                std::to_string(min) + ", " + std::to_string(max) + "] or empty (unstated)");
  }
  return static_cast<int64_t>(x);
}

Result<double> CsvNumber(const CsvRow& r, const std::string& col, const std::string& row, double above,
                         double unstated) {
  MS_ASSIGN_OR_RETURN(const std::string* v, Cell(r, col, row));
  if (v->empty()) return unstated;
  char* end = nullptr;
  errno = 0;
  const double x = std::strtod(v->c_str(), &end);
  if (end == v->c_str() || *end != '\0' || errno != 0 || !std::isfinite(x) || !(x > above)) {
    char bound[32];
    std::snprintf(bound, sizeof bound, "%g", above);
    return Status::InvalidInput(row + ": " + col + " = \"" + *v + "\": must be a finite number > " + bound +
                                " or empty (unstated)");
  }
  return x;
}

}  // namespace megascale
