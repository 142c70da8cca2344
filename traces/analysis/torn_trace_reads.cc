#include "traces/analysis/torn_trace_reads.h"

#include <initializer_list>
#include <memory>
#include <string>

#include "traces/import/trace_salvage.h"

namespace megascale {
namespace {

// Where the whole copy was read and its reading failed too, that failure is about what the cut
// left (no step completed before it, one too few for --warmup): said beside the cut.
Status BothFailures(const Status& as_is, const Status& whole, std::initializer_list<const TornTraceCopy*> copies) {
  std::string why = whole.message();
  for (const TornTraceCopy* copy : copies) {
    if (copy) why = copy->Named(why);
  }
  return Status::InvalidInput(as_is.message() + "; read up to the cut: " + why);
}

}  // namespace

Result<DiagnosisReport> DiagnoseEvenIfTorn(const TraceInput& input, const FullDiagnosisOptions& options) {
  Result<DiagnosisReport> report = DiagnoseInput(input, options);
  if (report.ok()) return report;
  const std::unique_ptr<TornTraceCopy> whole = TornTraceCopy::Of(input);
  if (!whole) return report;
  Result<DiagnosisReport> again = DiagnoseInput(whole->input(), options);
  if (!again.ok()) return BothFailures(report.status(), again.status(), {whole.get()});
  again->notes.insert(again->notes.begin(), whole->Note("diagnosed up to there, as a run that failed"));
  return again;
}

Result<TraceComparison> CompareEvenIfTorn(const TraceInput& predicted, const TraceInput& measured,
                                          const CompareOptions& options) {
  Result<TraceComparison> c = CompareTraces(predicted, measured, options);
  if (c.ok()) return c;
  const std::unique_ptr<TornTraceCopy> whole_predicted = TornTraceCopy::Of(predicted);
  const std::unique_ptr<TornTraceCopy> whole_measured = TornTraceCopy::Of(measured);
  if (!whole_predicted && !whole_measured) return c;
  Result<TraceComparison> again = CompareTraces(whole_predicted ? whole_predicted->input() : predicted,
                                                whole_measured ? whole_measured->input() : measured, options);
  if (!again.ok()) return BothFailures(c.status(), again.status(), {whole_predicted.get(), whole_measured.get()});
  // What the comparison says of a copy it says of the file the user named.
  for (const TornTraceCopy* whole : {whole_measured.get(), whole_predicted.get()}) {
    if (!whole) continue;
    for (std::string& note : again->notes) note = whole->Named(note);
    for (ComparedTrace* trace : {&again->predicted, &again->measured}) trace->path = whole->Named(trace->path);
    again->notes.insert(again->notes.begin(), whole->Note("compared up to there"));
  }
  return again;
}

}  // namespace megascale
