// The data pipeline of a run (MegaScale §3.4): where each step's rows come from.
//
//  * Prefetch: a helper thread draws step s+1's rows (exec/data/batch_sampler.h) into a second buffer
//    while step s runs, so the step never waits for the sampler (double buffering). The thread
//    only reads the token stream and writes its buffer: it makes no MPI call (MPI is initialized
//    FUNNELED, exec/runtime/mpi_communicator.h).
//  * One reader per node: only the first rank of each tensor-parallel group (TP rank 0; the planner
//    keeps TP groups inside a node) loads the corpus and draws rows; it broadcasts them to its TP
//    peers over the TP communicator, which need the same rows (they hold the same DP replica).
//    The other ranks never open the file or hold the tokens.
// Either switch gives the same batches, bit for bit, as every rank calling BatchSampler::SampleRow
// itself: a row is a pure function of (seed, step, row) and a broadcast copies bytes.
//
// Failure: Open is collective over world and returns the same verdict on every rank (a missing or
// bad corpus on any reader stops every rank before anyone waits for another). Fetch's only
// error is a failed broadcast. Not thread-safe: call from the thread that runs the steps; the
// helper thread is internal and joined by the destructor.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "base/status.h"
#include "exec/data/batch_sampler.h"
#include "exec/runtime/communicator.h"

namespace megascale {
namespace exec {

struct DataPipelineOptions {
  bool prefetch = true;             // draw the next step's rows on a helper thread
  bool one_reader_per_node = true;  // TP rank 0 reads and broadcasts to its TP group
};

// The rows a rank needs: rows [first_row, first_row + rows) of each step's global batch, each
// seq_len tokens, out of global_batch rows drawn with seed.
struct DataShard {
  int global_batch = 0;
  int seq_len = 0;
  int vocab = 0;
  uint64_t seed = 0;
  int first_row = 0;
  int rows = 0;
};

class DataPipeline {
 public:
  // Collective over world. tp_rank is this rank's TP coordinate (only rank 0 of a TP group reads
  // when options.one_reader_per_node). Errors name the corpus path.
  static Result<std::unique_ptr<DataPipeline>> Open(const std::string& corpus, const DataShard& shard,
                                                    const DataPipelineOptions& options, int tp_rank,
                                                    Communicator* world);
  ~DataPipeline();
  DataPipeline(const DataPipeline&) = delete;
  DataPipeline& operator=(const DataPipeline&) = delete;

  // This rank's rows of `step` into inputs and targets (rows x seq_len each). With one reader per
  // node it is collective over tp (the TP group of the tp_rank given to Open; nullptr = a group of
  // one). Steps may come in any order; the prefetch pays off when they come in sequence.
  Status Fetch(int64_t step, Communicator* tp, int32_t* inputs, int32_t* targets);

  bool reads() const { return sampler_.has_value(); }  // this rank holds the corpus

 private:
  DataPipeline(std::optional<BatchSampler> sampler, const DataShard& shard, const DataPipelineOptions& options);
  // Inputs then targets of this rank's rows: 2 x rows x seq_len tokens.
  void Draw(int64_t step, int32_t* both) const;
  void StartPrefetch(int64_t step);
  void PrefetchLoop();

  std::optional<BatchSampler> sampler_;  // readers only
  DataShard shard_;
  DataPipelineOptions options_;
  size_t row_tokens_ = 0;  // rows x seq_len
  std::vector<int32_t> batch_;  // the rows being handed out (and broadcast)

  // Prefetch state, guarded by mu_: the helper draws step `wanted_` into `ahead_`, then sets
  // `ready_` to it.
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<int32_t> ahead_;
  int64_t wanted_ = -1, ready_ = -1;
  bool stop_ = false;
  std::thread helper_;
};

}  // namespace exec
}  // namespace megascale
