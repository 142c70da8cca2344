// Rules and defaults of the reliability block (sim/reliability.proto).
#include "planner/spec/validate_util.h"

namespace megascale::validation {
namespace {

// Recovery phases and steps of at most ~12 days; bandwidths of at most 1 PB/s; at most 20 million
// failure draws over all trials (each a double kept for the interval search: 160 MB).
constexpr double kMaxSeconds = 1e6;
constexpr double kMaxGbytesPerS = 1e6;
constexpr double kMaxDraws = 2e7;

Status CheckSeconds(double v, const std::string& field) {
  MS_CHECK_RANGE(v, 0.0, kMaxSeconds, field, "seconds");
  return Status::Ok();
}

Status CheckRate(double v, const std::string& field) {
  MS_CHECK_FIELD(v > 0 && v <= kMaxGbytesPerS, field, v,
                 "must be a bandwidth in GB/s > 0 and at most " + Num(kMaxGbytesPerS));
  return Status::Ok();
}

}  // namespace

Status ResolveReliability(const ClusterSpec& c, ReliabilitySpec* r) {
  MS_CHECK_FIELD(r->failures_per_gpu_day() > 0 && r->failures_per_gpu_day() <= 1,
                 "reliability.failures_per_gpu_day", r->failures_per_gpu_day(),
                 "must be > 0 and at most 1 (Llama 3 saw 419 interruptions in 54 days on 16,384 GPUs: "
                 "4.7e-4)");
  MS_CHECK_FIELD(std::isfinite(r->days()) && r->days() > 0 && r->days() <= 3650, "reliability.days",
                 r->days(), "must be > 0 and at most 3650");
  MS_CHECK_FIELD(r->trials() >= 1 && r->trials() <= 100000, "reliability.trials", r->trials(),
                 "must be between 1 and 100000");
  MS_RETURN_IF_ERROR(CheckSeconds(r->step_time_s(), "reliability.step_time_s"));
  // Each trial keeps its failure times (sim/ettr/ettr.cc): their expected count bounds the memory.
  const double draws = r->failures_per_gpu_day() * c.num_gpus() * r->days() * r->trials();
  MS_CHECK_FIELD(draws <= kMaxDraws, "reliability.trials", r->trials(),
                 "trials x expected failures per trial (" +
                     Num(r->failures_per_gpu_day() * c.num_gpus() * r->days()) + ") must be at most " +
                     Num(kMaxDraws) + ": use fewer trials or days");
  r->set_failures_per_gpu_day(r->failures_per_gpu_day());
  r->set_days(r->days());
  r->set_trials(r->trials());
  r->set_step_time_s(r->step_time_s());

  RecoverySpec* rec = r->mutable_recovery();
  MS_RETURN_IF_ERROR(CheckSeconds(rec->detection_s(), "reliability.recovery.detection_s"));
  MS_RETURN_IF_ERROR(CheckSeconds(rec->diagnosis_s(), "reliability.recovery.diagnosis_s"));
  MS_RETURN_IF_ERROR(CheckSeconds(rec->replacement_s(), "reliability.recovery.replacement_s"));
  MS_RETURN_IF_ERROR(CheckSeconds(rec->restart_s(), "reliability.recovery.restart_s"));
  rec->set_detection_s(rec->detection_s());
  rec->set_diagnosis_s(rec->diagnosis_s());
  rec->set_replacement_s(rec->replacement_s());
  rec->set_restart_s(rec->restart_s());

  CheckpointSpec* ck = r->mutable_checkpoint();
  MS_CHECK_RANGE(ck->interval_steps(), 0, 100000000, "reliability.checkpoint.interval_steps",
                 "0 = search for the best interval");
  MS_RETURN_IF_ERROR(
      CheckRate(ck->host_copy_gbytes_per_s(), "reliability.checkpoint.host_copy_gbytes_per_s"));
  MS_RETURN_IF_ERROR(
      CheckRate(ck->node_storage_gbytes_per_s(), "reliability.checkpoint.node_storage_gbytes_per_s"));
  MS_RETURN_IF_ERROR(CheckRate(ck->storage_total_gbytes_per_s(),
                               "reliability.checkpoint.storage_total_gbytes_per_s"));
  ck->set_interval_steps(ck->interval_steps());
  ck->set_two_stage(ck->two_stage());
  ck->set_host_copy_gbytes_per_s(ck->host_copy_gbytes_per_s());
  ck->set_node_storage_gbytes_per_s(ck->node_storage_gbytes_per_s());
  ck->set_storage_total_gbytes_per_s(ck->storage_total_gbytes_per_s());
  ck->set_one_reader_per_group(ck->one_reader_per_group());
  return Status::Ok();
}

}  // namespace megascale::validation
