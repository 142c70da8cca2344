#include "sim/ettr/ettr_experiment.h"

#include "planner/program/plan_builder.h"

namespace megascale {

Result<EttrReport> RunEttrExperiment(const Scenario& s) {
  const ReliabilitySpec& r = s.reliability();
  EttrReport out;
  EttrModel& m = out.model;
  m.step_time_s = r.step_time_s();
  if (m.step_time_s <= 0) {
    MS_ASSIGN_OR_RETURN(Plan plan, BuildPlan(s));
    m.step_time_s = plan.prediction().iteration_time_s();
  }
  out.checkpoint = CheckpointCostsOf(s);
  const RecoverySpec& rec = r.recovery();
  m.failures_per_s = r.failures_per_gpu_day() * s.cluster().num_gpus() / 86400.0;
  m.block_s = out.checkpoint.block_s;
  m.async_s = out.checkpoint.async_s;
  m.recovery_s = rec.detection_s() + rec.diagnosis_s() + rec.replacement_s() + rec.restart_s() +
                 out.checkpoint.load_s;
  m.horizon_s = r.days() * 86400.0;
  m.trials = r.trials();
  m.seed = s.sim().seed();
  out.mtbf_s = 1 / m.failures_per_s;
  out.young_s = YoungInterval(m.block_s, out.mtbf_s);
  out.daly_s = DalyInterval(m.block_s, out.mtbf_s);
  out.search = SearchInterval(m);
  if (r.checkpoint().interval_steps() > 0) {
    out.has_chosen = true;
    out.chosen = SimulateEttr(m, r.checkpoint().interval_steps());
  }
  return out;
}

}  // namespace megascale
