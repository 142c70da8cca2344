// Rules and defaults of the run block (planner/scenario.proto RunSpec), the part of a scenario only
// `megascale run` reads. Called by ResolveScenario; thread-safe (no shared state).
#pragma once

#include "base/status.h"
#include "planner/model.pb.h"
#include "planner/scenario.pb.h"

namespace megascale::validation {

// Checks run's rules (BadField naming run.<field>, its value and the rule) and writes every default
// into the block, so `megascale validate` shows what a run will use. The corpus path is not opened
// here: the file may exist only on the machines the job runs on. A run injects only the scenario's
// faults.stragglers (a slowed device on each straggler's rank, exec/runtime/slowed_device.h); any other fault
// kind in `faults` is a BadField: it would be simulated but not run, and the two would disagree.
// With run.checkpoint.dir set, the interval is `reliability`'s (reliability.checkpoint), which must
// say one (> 0). run.faults name ranks of the layout's world.
// Also holds the scenario to what the executor can run (CheckRunnable).
Status ResolveRun(const Scenario& s, RunSpec* r);

// What the executor's GPT can run, beyond what every scenario must be: a GeLU MLP (a gated MLP is
// planned and simulated only), layout.tp dividing model.ffn_hidden (each TP rank holds ffn/tp of
// the MLP's columns), and with sequence parallelism a multiple of layout.tp rows in a micro-batch
// (training.micro_batch x model.seq_len: each TP rank holds its slice between regions). REQUIRES:
// a resolved model, layout and training. `megascale validate` checks it for a scenario with a run
// block; the executor (exec::Train) for whatever it is given, so both refuse alike.
Status CheckRunnable(const ModelSpec& m, const LayoutSpec& l, const TrainingSpec& t);
// The model's rules (ResolveModel's, on a copy) and the executor's GeLU MLP: what the executor's
// GPT (exec/model/gpt_config.h) checks a model it is handed against.
Status CheckRunnableModel(const ModelSpec& m);

}  // namespace megascale::validation
