// The rows of a per-operator timer trace, as read from CSV or JSON lines: one op of one rank in
// one step, times in seconds, in any order. Columns (CSV header names or JSON keys): dp_rank,
// stage, rank, step, optype, start_ts, duration (required); seq_id, mc, mb_id, gmc (optional; empty,
// null or NaN reads as -1). Other columns are ignored. Parquet has no reader here: docs/traces.md
// says how to convert it. Memory: ~48 bytes a row. Thread-safe (pure functions of the file).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"

namespace megascale {

struct TimerRow {
  int64_t step = 0;
  int64_t line = 0;        // 1-based line in the file, for messages
  double start_s = 0;
  double duration_s = 0;
  int32_t rank = 0;
  int32_t stage = 0;
  int32_t dp_rank = 0;
  int32_t optype = 0;      // index into TimerRows::optypes
  int32_t seq_id = -1;
  int32_t mc = -1;         // model chunk on its stage
  int32_t mb_id = -1;      // micro-batch (compute rows; -1 on communication rows)
  int32_t gmc = -1;
};

struct TimerRows {
  std::vector<std::string> optypes;   // distinct op type names, in order of first appearance
  std::vector<TimerRow> rows;
};

// InvalidInput names the file, the line and the column: a required column missing from the
// header, a cell that is not a number, a negative or non-finite duration, a non-integer step.
Result<TimerRows> ReadTimerCsv(const std::string& path);
Result<TimerRows> ReadTimerJsonLines(const std::string& path);

}  // namespace megascale
