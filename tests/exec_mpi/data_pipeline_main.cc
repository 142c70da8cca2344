// The data pipeline across processes (4 ranks = TP 2 x DP 2): with one reader per TP group, TP
// rank 1 never opens the corpus and receives, over its TP communicator, exactly the rows it would
// have drawn itself with BatchSampler (every rank checks its own, bit for bit, against a sampler it
// builds for the check). Argument: "on" or "off" (the prefetch thread).
// Exit status: 0 when every check on this rank passed; mpirun reports the worst rank's.
#include <cstdio>
#include <cstring>
#include <memory>

#include "exec/runtime/mpi_communicator.h"
#include "tests/exec/data_rows.h"

namespace megascale::exec {
namespace {

int Main(int argc, char** argv) {
  const bool prefetch = argc > 1 && std::strcmp(argv[1], "on") == 0;
  Result<std::unique_ptr<Communicator>> world = OpenWorld();
  if (!world.ok() || (*world)->size() != 4) {
    std::fprintf(stderr, "error: needs mpirun -np 4\n");
    return 1;
  }
  Communicator* w = world->get();
  const int tp_rank = w->rank() % 2, replica = w->rank() / 2;
  Result<std::unique_ptr<Communicator>> tp = w->Split(replica, tp_rank);
  if (!tp.ok()) return 1;

  const std::string corpus = std::string(MEGASCALE_SOURCE_DIR) + "/" + kShippedCorpus;
  DataShard shard;
  shard.global_batch = 8;
  shard.seq_len = 16;
  shard.vocab = kByteVocab;
  shard.seed = 3;
  shard.rows = 4;
  shard.first_row = replica * shard.rows;
  DataPipelineOptions options;
  options.prefetch = prefetch;
  options.one_reader_per_node = true;
  Result<std::unique_ptr<DataPipeline>> pipeline = DataPipeline::Open(corpus, shard, options, tp_rank, w);
  Result<BatchSampler> direct = testing::DirectSampler(corpus, shard);
  if (!pipeline.ok() || !direct.ok()) {
    std::fprintf(stderr, "rank %d: error opening the data\n", w->rank());
    return 1;
  }
  int failures = 0;
  if ((*pipeline)->reads() != (tp_rank == 0)) {
    std::fprintf(stderr, "rank %d: reads() = %d, expected only TP rank 0 to read\n", w->rank(),
                 (*pipeline)->reads());
    ++failures;
  }
  const int kSteps = 50;
  for (int step = 0; step < kSteps; ++step) {
    Result<std::vector<int32_t>> got = testing::FetchedRows(pipeline->get(), shard, step, tp->get());
    if (!got.ok()) {
      std::fprintf(stderr, "rank %d step %d: %s\n", w->rank(), step, got.status().message().c_str());
      return 1;
    }
    if (*got != testing::DirectRows(*direct, shard, step)) {
      std::fprintf(stderr, "rank %d step %d: rows differ from direct sampling\n", w->rank(), step);
      ++failures;
    }
  }
  if (w->rank() == 0) {
    std::printf("one reader per TP group, prefetch %s: %d steps x 4 ranks compared\n", prefetch ? "on" : "off",
                kSteps);
  }
  return failures == 0 ? 0 : 1;
}

}  // namespace
}  // namespace megascale::exec

int main(int argc, char** argv) { return megascale::exec::Main(argc, argv); }
