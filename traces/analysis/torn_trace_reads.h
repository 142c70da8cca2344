// The reads of the trace commands (diagnose, compare) that take a trace of ours cut mid-record
// (a killed `megascale run`'s temporary file, or a copy of it) as what it is: a run that failed,
// read up to the cut, with a note (traces/import/trace_salvage.h, TornTraceCopy). Each reads its inputs as
// they are first; only where that fails does it read whole copies. Where no input is cut, the
// failure is returned as it was; where the copies fail too, both are said (InvalidInput).
#pragma once

#include "base/status.h"
#include "traces/analysis/diagnose_input.h"
#include "traces/analysis/trace_compare.h"

namespace megascale {

Result<DiagnosisReport> DiagnoseEvenIfTorn(const TraceInput& input, const FullDiagnosisOptions& options);

Result<TraceComparison> CompareEvenIfTorn(const TraceInput& predicted, const TraceInput& measured,
                                          const CompareOptions& options);

}  // namespace megascale
