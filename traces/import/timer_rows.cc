#include "traces/import/timer_rows.h"

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <unordered_map>

#include <nlohmann/json.hpp>

namespace megascale {
namespace {

enum Column { kDpRank, kStage, kRank, kStep, kOptype, kStart, kDuration, kSeqId, kMc, kMbId, kGmc, kColumns };
constexpr const char* kNames[kColumns] = {"dp_rank", "stage", "rank", "step", "optype", "start_ts",
                                          "duration", "seq_id", "mc", "mb_id", "gmc"};
constexpr int kRequired = kSeqId;  // the columns before seq_id are required

bool Missing(const std::string& cell) {
  return cell.empty() || cell == "nan" || cell == "NaN" || cell == "<NA>" || cell == "None" || cell == "null";
}

// Builds TimerRows from the cells of each row, whatever the file format.
class RowBuilder {
 public:
  explicit RowBuilder(std::string path) : path_(std::move(path)) {}

  // cells[c]: the text of column c ("" when the row has none).
  Status Add(const std::string (&cells)[kColumns], int64_t line) {
    TimerRow row;
    row.line = line;
    const std::string& optype = cells[kOptype];
    if (optype.empty()) return Bad(line, kOptype, optype, "must name the op type");
    auto [it, added] = index_.emplace(optype, static_cast<int32_t>(out_.optypes.size()));
    if (added) out_.optypes.push_back(optype);
    row.optype = it->second;
    int64_t v = 0;
    MS_RETURN_IF_ERROR(Integer(cells, kStep, line, false, &v));
    row.step = v;
    for (auto [column, field] : {std::make_pair(kRank, &row.rank), std::make_pair(kStage, &row.stage),
                                 std::make_pair(kDpRank, &row.dp_rank), std::make_pair(kSeqId, &row.seq_id),
                                 std::make_pair(kMc, &row.mc), std::make_pair(kMbId, &row.mb_id),
                                 std::make_pair(kGmc, &row.gmc)}) {
      MS_RETURN_IF_ERROR(Integer(cells, column, line, column >= kRequired, &v));
      *field = static_cast<int32_t>(v);
    }
    MS_RETURN_IF_ERROR(Seconds(cells, kStart, line, &row.start_s));
    MS_RETURN_IF_ERROR(Seconds(cells, kDuration, line, &row.duration_s));
    // Times become int64 nanoseconds: a clock within +-4e9 s (Unix time until 2096) and an op
    // shorter than 1e6 s (11 days) keep every sum of them in range.
    if (std::fabs(row.start_s) > 4e9) return Bad(line, kStart, cells[kStart], "must be within +-4e9 seconds");
    if (row.duration_s < 0) return Bad(line, kDuration, cells[kDuration], "must be >= 0 seconds");
    if (row.duration_s > 1e6) return Bad(line, kDuration, cells[kDuration], "must be at most 1e6 seconds");
    out_.rows.push_back(row);
    return Status::Ok();
  }

  TimerRows Take() { return std::move(out_); }

  Status Bad(int64_t line, int column, const std::string& value, const std::string& rule) const {
    return Status::InvalidInput("trace '" + path_ + "' line " + std::to_string(line) + ": " + kNames[column] +
                                " = \"" + value + "\": " + rule);
  }

 private:
  // An integer, written as one ("16") or as an integral float ("16.0", what pandas writes for a
  // column with missing values). `optional`: missing cells read as -1.
  Status Integer(const std::string (&cells)[kColumns], int column, int64_t line, bool optional, int64_t* out) const {
    const std::string& c = cells[column];
    if (Missing(c)) {
      if (optional) return *out = -1, Status::Ok();
      return Bad(line, column, c, "is required");
    }
    char* end = nullptr;
    const double x = std::strtod(c.c_str(), &end);
    if (*end != '\0' || !std::isfinite(x) || x != std::floor(x) || std::fabs(x) > 2e9) {
      return Bad(line, column, c, "must be an integer");
    }
    if (x < (column == kMbId || column == kMc || column == kGmc || column == kSeqId ? -1 : 0)) {
      return Bad(line, column, c, "must be >= 0");
    }
    *out = static_cast<int64_t>(x);
    return Status::Ok();
  }

  Status Seconds(const std::string (&cells)[kColumns], int column, int64_t line, double* out) const {
    const std::string& c = cells[column];
    char* end = nullptr;
    const double x = std::strtod(c.c_str(), &end);
    if (Missing(c) || *end != '\0' || !std::isfinite(x)) return Bad(line, column, c, "must be finite seconds");
    *out = x;
    return Status::Ok();
  }

  std::string path_;
  TimerRows out_;
  std::unordered_map<std::string, int32_t> index_;
};

void Trim(std::string& s) {
  size_t b = 0, e = s.size();
  while (b < e && (s[b] == ' ' || s[b] == '\t')) ++b;
  while (e > b && (s[e - 1] == ' ' || s[e - 1] == '\t' || s[e - 1] == '\r')) --e;
  if (e - b >= 2 && s[b] == '"' && s[e - 1] == '"') ++b, --e;  // a quoted cell
  s = s.substr(b, e - b);
}

void SplitCsv(const std::string& line, std::vector<std::string>* cells) {
  cells->clear();
  size_t from = 0;
  while (true) {
    const size_t comma = line.find(',', from);
    cells->push_back(line.substr(from, comma == std::string::npos ? std::string::npos : comma - from));
    Trim(cells->back());
    if (comma == std::string::npos) break;
    from = comma + 1;
  }
}

}  // namespace

Result<TimerRows> ReadTimerCsv(const std::string& path) {
  std::ifstream in(path);
  if (!in) return Status::NotFound("cannot read trace '" + path + "'");
  std::string line;
  if (!std::getline(in, line)) return Status::InvalidInput("trace '" + path + "' is empty");
  std::vector<std::string> cells;
  SplitCsv(line, &cells);
  int at[kColumns];
  for (int c = 0; c < kColumns; ++c) {
    at[c] = -1;
    for (size_t i = 0; i < cells.size(); ++i) {
      if (cells[i] == kNames[c]) at[c] = static_cast<int>(i);
    }
    if (at[c] < 0 && c < kRequired) {
      return Status::InvalidInput("trace '" + path + "': the header line has no column \"" + kNames[c] +
                                  "\" (it has: " + line + ")");
    }
  }
  RowBuilder rows(path);
  std::string row[kColumns];
  for (int64_t line_no = 2; std::getline(in, line); ++line_no) {
    if (line.empty() || line == "\r") continue;
    SplitCsv(line, &cells);
    for (int c = 0; c < kColumns; ++c) {
      if (at[c] >= static_cast<int>(cells.size()) && c < kRequired) {
        return Status::InvalidInput("trace '" + path + "' line " + std::to_string(line_no) + ": " +
                                    std::to_string(cells.size()) + " cells, no " + kNames[c] + " (the header has " +
                                    std::to_string(at[c] + 1) + " columns or more)");
      }
      row[c] = at[c] >= 0 && at[c] < static_cast<int>(cells.size()) ? cells[at[c]] : "";
    }
    MS_RETURN_IF_ERROR(rows.Add(row, line_no));
  }
  return rows.Take();
}

Result<TimerRows> ReadTimerJsonLines(const std::string& path) {
  std::ifstream in(path);
  if (!in) return Status::NotFound("cannot read trace '" + path + "'");
  RowBuilder rows(path);
  std::string line, row[kColumns];
  for (int64_t line_no = 1; std::getline(in, line); ++line_no) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    nlohmann::json j;
    try {
      j = nlohmann::json::parse(line);
    } catch (const nlohmann::json::exception& e) {
      return Status::InvalidInput("trace '" + path + "' line " + std::to_string(line_no) +
                                  " is not a JSON object: " + e.what());
    }
    if (!j.is_object()) {
      return Status::InvalidInput("trace '" + path + "' line " + std::to_string(line_no) + " is not a JSON object");
    }
    for (int c = 0; c < kColumns; ++c) {
      auto it = j.find(kNames[c]);
      if (it == j.end()) {
        if (c < kRequired) {
          return Status::InvalidInput("trace '" + path + "' line " + std::to_string(line_no) + ": no key \"" +
                                      kNames[c] + "\"");
        }
        row[c].clear();
      } else {
        row[c] = it->is_string() ? it->get<std::string>() : it->is_null() ? std::string() : it->dump();
      }
    }
    MS_RETURN_IF_ERROR(rows.Add(row, line_no));
  }
  return rows.Take();
}

}  // namespace megascale
