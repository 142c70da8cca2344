// calibration.csv's header line, for tests that write rows of their own in its columns (the
// planner's and the CLI's).
#pragma once

namespace megascale::testing {

inline constexpr char kCalibrationCsvHeader[] =
    "source,model,params_b,layers,hidden,heads,kv_heads,ffn,seq_len,vocab,gpu,num_gpus,tp,pp,dp,cp,vp,"
    "micro_batch,global_batch,recompute,seq_parallel,measured_tflops_per_gpu,measured_mfu,measured_iter_time_s,notes\n";

}  // namespace megascale::testing
