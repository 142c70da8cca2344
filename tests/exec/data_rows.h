// Shared by the data pipeline's tests (tests/exec, tests/exec_mpi): the rows a rank gets from
// DataPipeline::Fetch, and the same rows drawn directly with BatchSampler::SampleRow (what every
// rank did before the pipeline), as one vector each: inputs then targets.
#pragma once

#include <vector>

#include "exec/data/batch_sampler.h"
#include "exec/data/corpus.h"
#include "exec/data/data_pipeline.h"

namespace megascale::exec::testing {

inline std::vector<int32_t> DirectRows(const BatchSampler& sampler, const DataShard& shard, int64_t step) {
  const size_t n = static_cast<size_t>(shard.rows) * shard.seq_len;
  std::vector<int32_t> both(2 * n);
  for (int r = 0; r < shard.rows; ++r) {
    sampler.SampleRow(step, shard.first_row + r, both.data() + static_cast<size_t>(r) * shard.seq_len,
                      both.data() + n + static_cast<size_t>(r) * shard.seq_len);
  }
  return both;
}

inline Result<std::vector<int32_t>> FetchedRows(DataPipeline* pipeline, const DataShard& shard, int64_t step,
                                                Communicator* tp) {
  const size_t n = static_cast<size_t>(shard.rows) * shard.seq_len;
  std::vector<int32_t> both(2 * n, -1);
  MS_RETURN_IF_ERROR(pipeline->Fetch(step, tp, both.data(), both.data() + n));
  return both;
}

// The sampler of the shard's corpus, as a rank without the pipeline made it.
inline Result<BatchSampler> DirectSampler(const std::string& corpus, const DataShard& shard) {
  MS_ASSIGN_OR_RETURN(std::vector<int32_t> tokens, LoadTrainingTokens(corpus));
  return BatchSampler::Create(std::move(tokens), shard.global_batch, shard.seq_len, shard.vocab, shard.seed);
}

}  // namespace megascale::exec::testing
