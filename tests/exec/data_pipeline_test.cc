// The data pipeline (exec/data/data_pipeline.h) hands out exactly the rows BatchSampler draws directly,
// with and without the prefetch thread, in order and out of order; errors name the corpus. The
// one-reader-per-TP-group broadcast across processes is tested by tests/exec_mpi
// (exec_mpi.data_pipeline_*), since a group of one has no peer to send to.
#include <gtest/gtest.h>

#include <memory>

#include "exec/runtime/self_communicator.h"
#include "tests/exec/data_rows.h"

namespace megascale::exec {
namespace {

std::string Shipped() { return std::string(MEGASCALE_SOURCE_DIR) + "/" + kShippedCorpus; }

DataShard Shard() {
  DataShard s;
  s.global_batch = 8;
  s.seq_len = 16;
  s.vocab = kByteVocab;
  s.seed = 7;
  s.first_row = 4;  // replica 1 of 2
  s.rows = 4;
  return s;
}

// Steps in sequence (what the trainer asks), then repeats and jumps (the prefetched step is not
// the one asked for, so the pipeline must draw the right one instead).
const std::vector<int64_t> kSteps = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 9, 4, 20, 21, 3, 100};

void ExpectDirectRows(const DataPipelineOptions& options) {
  SelfCommunicator world;
  const DataShard shard = Shard();
  Result<std::unique_ptr<DataPipeline>> pipeline = DataPipeline::Open(Shipped(), shard, options, 0, &world);
  ASSERT_TRUE(pipeline.ok()) << pipeline.status().message();
  EXPECT_TRUE((*pipeline)->reads());
  Result<BatchSampler> sampler = testing::DirectSampler(Shipped(), shard);
  ASSERT_TRUE(sampler.ok());
  for (int64_t step : kSteps) {
    Result<std::vector<int32_t>> got = testing::FetchedRows(pipeline->get(), shard, step, nullptr);
    ASSERT_TRUE(got.ok()) << got.status().message();
    EXPECT_EQ(*got, testing::DirectRows(*sampler, shard, step)) << "step " << step;
  }
}

TEST(DataPipeline, PrefetchedBatchesEqualDirectSampling) {
  DataPipelineOptions o;
  o.prefetch = true;
  ExpectDirectRows(o);
}

TEST(DataPipeline, WithoutPrefetchBatchesEqualDirectSampling) {
  DataPipelineOptions o;
  o.prefetch = false;
  ExpectDirectRows(o);
}

TEST(DataPipeline, EveryRankReadingEqualsDirectSampling) {
  DataPipelineOptions o;
  o.one_reader_per_node = false;
  ExpectDirectRows(o);
}

TEST(DataPipeline, DistinctStepsGiveDistinctRows) {
  // Guards the comparisons above against a pipeline that hands out one batch for every step.
  SelfCommunicator world;
  const DataShard shard = Shard();
  Result<std::unique_ptr<DataPipeline>> pipeline = DataPipeline::Open(Shipped(), shard, {}, 0, &world);
  ASSERT_TRUE(pipeline.ok());
  Result<std::vector<int32_t>> a = testing::FetchedRows(pipeline->get(), shard, 0, nullptr);
  Result<std::vector<int32_t>> b = testing::FetchedRows(pipeline->get(), shard, 1, nullptr);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_NE(*a, *b);
}

TEST(DataPipeline, NonReaderDoesNotOpenTheCorpus) {
  // TP rank 1 with one reader per node never touches the file: a missing path is not its error.
  SelfCommunicator world;
  Result<std::unique_ptr<DataPipeline>> pipeline =
      DataPipeline::Open("/nonexistent/corpus.txt", Shard(), {}, /*tp_rank=*/1, &world);
  ASSERT_TRUE(pipeline.ok()) << pipeline.status().message();
  EXPECT_FALSE((*pipeline)->reads());
  // ... and without a TP group to receive from it cannot produce rows.
  std::vector<int32_t> in(64), tg(64);
  EXPECT_FALSE((*pipeline)->Fetch(0, nullptr, in.data(), tg.data()).ok());
}

TEST(DataPipeline, MissingCorpusNamesThePath) {
  SelfCommunicator world;
  Result<std::unique_ptr<DataPipeline>> pipeline =
      DataPipeline::Open("/nonexistent/corpus.txt", Shard(), {}, 0, &world);
  ASSERT_FALSE(pipeline.ok());
  EXPECT_EQ(pipeline.status().code(), Status::Code::kNotFound);
  EXPECT_NE(pipeline.status().message().find("/nonexistent/corpus.txt"), std::string::npos);
}

TEST(DataPipeline, TokensOutsideTheVocabularyNameTheCorpus) {
  SelfCommunicator world;
  DataShard shard = Shard();
  shard.vocab = 64;  // English text has bytes above 64
  Result<std::unique_ptr<DataPipeline>> pipeline = DataPipeline::Open(Shipped(), shard, {}, 0, &world);
  ASSERT_FALSE(pipeline.ok());
  EXPECT_NE(pipeline.status().message().find(kShippedCorpus), std::string::npos);
  EXPECT_NE(pipeline.status().message().find("vocabulary"), std::string::npos);
}

}  // namespace
}  // namespace megascale::exec
