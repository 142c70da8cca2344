#include "exec/data/data_pipeline.h"

#include <algorithm>

#include "exec/data/corpus.h"
#include "exec/parallel/parallel_groups.h"

namespace megascale {
namespace exec {

Result<std::unique_ptr<DataPipeline>> DataPipeline::Open(const std::string& corpus, const DataShard& shard,
                                                         const DataPipelineOptions& options, int tp_rank,
                                                         Communicator* world) {
  const bool reads = !options.one_reader_per_node || tp_rank == 0;
  Status mine;
  std::optional<BatchSampler> sampler;
  if (reads) {
    Result<std::vector<int32_t>> tokens = Status::InvalidInput("corpus: no path given (RunOptions.corpus)");
    if (!corpus.empty()) tokens = LoadTrainingTokens(corpus);
    if (tokens.ok()) {
      Result<BatchSampler> made =
          BatchSampler::Create(std::move(*tokens), shard.global_batch, shard.seq_len, shard.vocab, shard.seed);
      if (made.ok()) {
        sampler.emplace(std::move(*made));
      } else {
        mine = Status::InvalidInput("corpus " + corpus + ": " + made.status().message());
      }
    } else {
      mine = tokens.status();
    }
  }
  // Before anyone waits for a reader that has given up (a non-reader has nothing to report).
  MS_RETURN_IF_ERROR(AgreeOnStatus(world, mine));
  return std::unique_ptr<DataPipeline>(new DataPipeline(std::move(sampler), shard, options));
}

DataPipeline::DataPipeline(std::optional<BatchSampler> sampler, const DataShard& shard,
                           const DataPipelineOptions& options)
    : sampler_(std::move(sampler)), shard_(shard), options_(options) {
  row_tokens_ = static_cast<size_t>(shard.rows) * shard.seq_len;
  batch_.assign(2 * row_tokens_, 0);
  if (reads() && options_.prefetch) {
    ahead_.assign(2 * row_tokens_, 0);
    wanted_ = 0;  // step 0 is drawn while the model is being set up
    helper_ = std::thread([this] { PrefetchLoop(); });
  }
}

DataPipeline::~DataPipeline() {
  if (!helper_.joinable()) return;
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  helper_.join();
}

void DataPipeline::Draw(int64_t step, int32_t* both) const {
  const int T = shard_.seq_len;
  for (int r = 0; r < shard_.rows; ++r) {
    sampler_->SampleRow(step, shard_.first_row + r, both + static_cast<size_t>(r) * T,
                        both + row_tokens_ + static_cast<size_t>(r) * T);
  }
}

// The helper draws step wanted_ whenever it differs from ready_. The main thread touches ahead_
// only when ready_ == wanted_ (the helper is idle), so ahead_ needs no lock while being drawn.
void DataPipeline::PrefetchLoop() {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    cv_.wait(lock, [this] { return stop_ || wanted_ != ready_; });
    if (stop_) return;
    const int64_t step = wanted_;
    lock.unlock();
    Draw(step, ahead_.data());
    lock.lock();
    ready_ = step;
    cv_.notify_all();
  }
}

Status DataPipeline::Fetch(int64_t step, Communicator* tp, int32_t* inputs, int32_t* targets) {
  const bool shared = options_.one_reader_per_node && tp != nullptr && tp->size() > 1;
  if (!reads() && !shared) {
    return Status::Internal("data pipeline: this rank does not read the corpus and has no TP group to receive from");
  }
  if (reads() && helper_.joinable()) {
    std::unique_lock<std::mutex> lock(mu_);
    if (wanted_ != step) {  // not the step prefetched (the first one asked, or out of order)
      cv_.wait(lock, [this] { return ready_ == wanted_; });
      wanted_ = step;
      cv_.notify_all();
    }
    cv_.wait(lock, [this, step] { return ready_ == step; });
    batch_.swap(ahead_);  // the helper is idle: it has drawn wanted_ == step
    wanted_ = step + 1;   // draw the next step while this one runs
    cv_.notify_all();
  } else if (reads()) {
    Draw(step, batch_.data());
  }
  // TP peers hold the same DP replica, so they need the same rows: the reader (TP rank 0) sends them.
  if (shared) MS_RETURN_IF_ERROR(tp->Broadcast(batch_.data(), batch_.size() * sizeof(int32_t), 0));
  std::copy(batch_.begin(), batch_.begin() + row_tokens_, inputs);
  std::copy(batch_.begin() + row_tokens_, batch_.end(), targets);
  return Status::Ok();
}

}  // namespace exec
}  // namespace megascale
