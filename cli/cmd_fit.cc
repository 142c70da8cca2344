// `megascale fit`: the cost model's per-GPU constants fitted on the published runs of a reference
// folder (planner/fit/reference_fit.h), printed beside the stored ones with each file's error under
// both; with --loso, each source held out in turn (docs/calibration.md).
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <iostream>
#include <map>
#include <thread>

#include "cli/commands.h"
#include "planner/cost/calibration.h"
#include "planner/fit/moe_runs.h"
#include "planner/fit/published_runs.h"
#include "planner/fit/reference_fit.h"
#include "planner/fit/vtrain_runs.h"

namespace megascale::cli {
namespace {

constexpr char kPublishedFile[] = "calibration.csv";
constexpr const char* kVtrainFile = kVtrainFileName;
constexpr const char* kMoeFile = kMoeFileName;

// One reference file's rows, by the rules of its kind; none when the folder does not hold it.
Result<std::vector<PublishedRun>> LoadFile(const std::string& folder, const std::string& file) {
  const std::string path = (std::filesystem::path(folder) / file).string();
  std::error_code ec;  // a folder it may not list reads as one without the file, not an exception
  if (!std::filesystem::exists(path, ec)) return std::vector<PublishedRun>{};
  if (file == kMoeFile) {
    MS_ASSIGN_OR_RETURN(const std::vector<CsvRow> rows, ReadCsvFile(path));
    MS_ASSIGN_OR_RETURN(const MoeRows moe, MoeReferenceRuns(rows, path));
    for (const std::string& skipped : moe.skipped) std::printf("  not predicted: %s\n", skipped.c_str());
    return moe.runs;
  }
  return ReadPublishedRunFile(path);
}

int MapeRows(const std::vector<PublishedRun>& runs) {
  return static_cast<int>(std::count_if(runs.begin(), runs.end(), [](const PublishedRun& r) { return r.in_mape; }));
}

void PrintKnobs(const ConstantsFit& fit) {
  std::printf("  %-24s %12s %12s\n", "constant", "stored", "fitted");
  for (const FittedKnob& k : fit.knobs) std::printf("  %-24s %12.4g %12.4g\n", k.name.c_str(), k.start, k.fitted);
  std::printf("  objective %.4f at the stored constants, %.4f fitted (mean over files of the mean over their sources "
              "of each source's MAPE, + worst-row term)\n",
              fit.objective_start, fit.objective);
}

// A many-row file's error per TP degree and per hidden size (the bar: each group's mean within
// 5 %): mean signed error and MAPE under the stored and the fitted constants.
void PrintGroups(const std::vector<PublishedRun>& runs, const std::vector<RunPrediction>& stored,
                 const std::vector<RunPrediction>& fitted) {
  const std::pair<const char*, std::function<int(const Scenario&)>> keys[] = {
      {"TP", [](const Scenario& s) { return s.layout().tp(); }},
      {"hidden", [](const Scenario& s) { return static_cast<int>(s.model().hidden()); }}};
  for (const auto& [what, key] : keys) {
    const std::map<int, GroupError> before = GroupErrors(runs, stored, key), after = GroupErrors(runs, fitted, key);
    for (const auto& [value, g] : before) {
      const GroupError& f = after.at(value);
      std::printf("    %-6s %6d: %5d rows, mean %+6.1f%% stored %+6.1f%% fitted, MAPE %5.1f%% stored %5.1f%% fitted\n",
                  what, value, g.rows, 100 * g.mean, 100 * f.mean, 100 * g.mape, 100 * f.mape);
    }
  }
}

// Each file's MAPE and worst row under the stored and the fitted constants; the rows themselves
// where a file has few (calibration.csv), not vTrain's 1,440.
Status PrintFiles(const std::vector<RowSet>& sets, const ConstantsFit& fit, int threads) {
  std::printf("  %-30s %6s %14s %14s %14s %14s\n", "file", "rows", "MAPE stored", "MAPE fitted", "worst stored",
              "worst fitted");
  for (const RowSet& set : sets) {
    if (MapeRows(set.runs) == 0) continue;
    MS_ASSIGN_OR_RETURN(const std::vector<RunPrediction> stored, PredictRuns(set.runs, nullptr, threads));
    MS_ASSIGN_OR_RETURN(const std::vector<RunPrediction> fitted, PredictWithFit(set.runs, fit, threads));
    std::printf("  %-30s %6d %13.2f%% %13.2f%% %13.1f%% %13.1f%%\n", set.name.c_str(), MapeRows(set.runs),
                100 * Mape(set.runs, stored), 100 * Mape(set.runs, fitted), 100 * WorstError(set.runs, stored),
                100 * WorstError(set.runs, fitted));
    if (set.runs.size() > 100) {
      PrintGroups(set.runs, stored, fitted);
      continue;
    }
    for (size_t i = 0; i < set.runs.size(); ++i) {
      const PublishedRun& r = set.runs[i];
      std::printf("    %-28s %-30s %9.2fs  stored %+6.1f%%  fitted %+6.1f%%%s\n", r.label.c_str(), r.layout.c_str(),
                  r.measured_s, 100 * stored[i].error, 100 * fitted[i].error,
                  !r.in_mape ? "  (MFU endpoint, not in the MAPE)" : r.fit_row ? "" : "  (held out of the fit)");
    }
  }
  return Status::Ok();
}

void PrintFolds(const std::string& gpu, const std::vector<RowSet>& sets, const std::vector<SourceFold>& folds) {
  std::printf("\n%s, leave one source out: each source's rows predicted by the constants fitted without it\n",
              gpu.c_str());
  std::printf("  %-62s %5s %15s %12s %9s\n", "held-out source", "rows", "without it", "with it", "stored");
  double sum = 0;
  for (const SourceFold& f : folds) {
    std::printf("  %-62s %5zu %14.2f%% %11.2f%% %8.2f%%\n", f.source.substr(0, 62).c_str(), f.held.size(),
                100 * f.mape_without, 100 * f.mape_with, 100 * f.mape_stored);
    for (size_t i = 0; i < f.held.size() && f.held.size() <= 30; ++i) {
      std::printf("    %-28s held out %+6.1f%%  with it %+6.1f%%  stored %+6.1f%%\n", f.held[i].label.c_str(),
                  100 * f.without[i].error, 100 * f.with[i].error, 100 * f.stored[i].error);
    }
    sum += f.mape_without;
  }
  // Per file, its sources' held-out MAPE weighted by their rows: the file's own figure.
  for (const RowSet& set : sets) {
    double rows = 0, without = 0, with = 0, stored = 0;
    for (const SourceFold& f : folds) {
      const bool in_set = std::any_of(set.runs.begin(), set.runs.end(),
                                      [&](const PublishedRun& r) { return r.source == f.source; });
      if (!in_set) continue;
      rows += f.held.size();
      without += f.mape_without * f.held.size();
      with += f.mape_with * f.held.size();
      stored += f.mape_stored * f.held.size();
    }
    if (rows > 0) {
      std::printf("  %-62s %5.0f %14.2f%% %11.2f%% %8.2f%%\n", (set.name + ", its sources' rows").c_str(), rows,
                  100 * without / rows, 100 * with / rows, 100 * stored / rows);
    }
  }
  std::printf("  held-out MAPE %.2f%%, the mean over %zu sources (each weighing the same)\n", 100 * sum / folds.size(),
              folds.size());
}

std::string StoredNames() {
  std::string names;
  for (const GpuCalibration& c : AllCalibrations()) names += (names.empty() ? "" : ", ") + c.gpu;
  return names;
}

Status CheckFitArgs(const FitArgs& args) {
  std::error_code ec;
  if (!std::filesystem::is_directory(args.reference, ec)) {
    return Status::NotFound("--reference " + args.reference + ": no such folder (the reference files' folder, " +
                            "e.g. ../shared/reference or the repository's tests/planner/data)");
  }
  if (args.threads < 0 || args.threads > 1024) {
    return Status::BadField("--threads", std::to_string(args.threads), "must be in [0, 1024] (0: every core)");
  }
  for (const std::string& f : args.files) {
    if (f != kPublishedFile && f != kVtrainFile && f != kMoeFile) {
      return Status::BadField("--file", f, std::string("must be ") + kPublishedFile + ", " + kVtrainFile + " or " + kMoeFile);
    }
  }
  const std::vector<GpuCalibration>& stored_all = AllCalibrations();
  if (!args.gpu.empty() && std::none_of(stored_all.begin(), stored_all.end(),
                                        [&](const GpuCalibration& c) { return c.gpu == args.gpu; })) {
    return Status::BadField("--gpu", args.gpu, "must name a stored calibration (" + StoredNames() + ")");
  }
  return Status::Ok();
}

// Per stored calibration, one row set per file (in file order), its rows of that GPU type.
Result<std::map<std::string, std::vector<RowSet>>> LoadRowSets(const FitArgs& args) {
  std::map<std::string, std::vector<RowSet>> by_gpu;
  int files = 0;
  for (const char* file : {kPublishedFile, kVtrainFile, kMoeFile}) {
    const bool named = std::find(args.files.begin(), args.files.end(), file) != args.files.end();
    // The MoE rows only when named: the stored dense fit is not a fit on them.
    if (args.files.empty() ? file == std::string(kMoeFile) : !named) continue;
    MS_ASSIGN_OR_RETURN(const std::vector<PublishedRun> runs, LoadFile(args.reference, file));
    if (runs.empty()) continue;
    ++files;
    std::printf("%s: %zu rows (%d measured)\n", (std::filesystem::path(args.reference) / file).c_str(), runs.size(),
                MapeRows(runs));
    for (const GpuCalibration& c : AllCalibrations()) {
      RowSet set{file, {}, file != std::string(kVtrainFile)};
      for (const PublishedRun& r : runs) {
        if (CalibrationFor(r.scenario.cluster().gpu()).gpu == c.gpu) set.runs.push_back(r);
      }
      if (!set.runs.empty()) by_gpu[c.gpu].push_back(std::move(set));
    }
  }
  if (files == 0) {
    return Status::NotFound("--reference " + args.reference + ": holds " +
                            (args.files.empty() ? std::string("neither ") + kPublishedFile + " nor " + kVtrainFile
                                                : "none of the --file names") +
                            " (../shared/reference/README.md says what they hold)");
  }
  return by_gpu;
}

bool IsFitRow(const PublishedRun& r) { return r.fit_row; }

// One GPU type's fit from its stored constants, printed with each file's errors and, with --loso,
// the held-out folds. False when none of its rows may be fitted on.
Result<bool> FitOneGpu(const GpuCalibration& stored, const std::vector<RowSet>& sets, const FitArgs& args,
                       const FitOptions& options) {
  std::printf("\n%s: fitting on", stored.gpu.c_str());
  for (const RowSet& s : sets) {
    std::printf(" %s (%d rows of %zu in the fit)", s.name.c_str(),
                static_cast<int>(std::count_if(s.runs.begin(), s.runs.end(), IsFitRow)), s.runs.size());
  }
  std::printf(", from the stored constants\n");
  std::fflush(stdout);
  const bool any_fit_row = std::any_of(sets.begin(), sets.end(), [](const RowSet& s) {
    return std::any_of(s.runs.begin(), s.runs.end(), IsFitRow);
  });
  if (!any_fit_row) {
    std::printf("%s: no row to fit on (every row is an MFU endpoint or too large a plan): not fitted\n",
                stored.gpu.c_str());
    return false;
  }
  Result<ConstantsFit> fit = FitConstants(sets, stored, options);
  if (!fit.ok()) return Status::InvalidInput(stored.gpu + ": " + fit.status().message());
  PrintKnobs(*fit);
  MS_RETURN_IF_ERROR(PrintFiles(sets, *fit, options.threads));
  if (args.loso) {
    MS_ASSIGN_OR_RETURN(const std::vector<SourceFold> folds, LeaveOneSourceOut(sets, stored, *fit, options));
    if (folds.empty()) {
      std::printf("\n%s: all rows from one source: no fold to leave out\n", stored.gpu.c_str());
    } else {
      PrintFolds(stored.gpu, sets, folds);
    }
  }
  std::fflush(stdout);
  return true;
}

}  // namespace

Status RunFit(const FitArgs& args) {
  MS_RETURN_IF_ERROR(CheckFitArgs(args));
  FitOptions options;
  options.knobs = args.knobs;
  options.threads = args.threads > 0 ? args.threads : std::max(1u, std::thread::hardware_concurrency());
  if (!args.quiet) options.progress = [](const std::string& line) { std::cerr << "fit: " << line << "\n"; };
  MS_ASSIGN_OR_RETURN(const auto by_gpu, LoadRowSets(args));
  bool fitted_any = false;
  for (const GpuCalibration& stored : AllCalibrations()) {
    if (!args.gpu.empty() && stored.gpu != args.gpu) continue;
    auto it = by_gpu.find(stored.gpu);
    if (it == by_gpu.end()) {
      std::printf("\n%s: no rows in %s\n", stored.gpu.c_str(), args.reference.c_str());
      continue;
    }
    MS_ASSIGN_OR_RETURN(const bool fitted, FitOneGpu(stored, it->second, args, options));
    fitted_any |= fitted;
  }
  if (!fitted_any) {
    return Status::InvalidInput("--reference " + args.reference + ": no rows to fit of " +
                                (args.gpu.empty() ? "any stored GPU type (" + StoredNames() + ")" : args.gpu));
  }
  std::printf("\nThe stored constants live in planner/cost/calibration.cc; a fit is stored there by hand, after review "
              "(docs/calibration.md, \"The stored fit\").\n");
  return Status::Ok();
}

}  // namespace megascale::cli
