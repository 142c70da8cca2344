// Token files, the shipped corpus and the batch sampler: round trips, clear errors, determinism.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cmath>
#include <cstdio>

#include "base/atomic_file.h"
#include "exec/data/batch_sampler.h"
#include "exec/data/corpus.h"
#include "exec/data/token_file.h"

namespace megascale {
namespace exec {
namespace {

std::string TempPath(const std::string& name) {
  return ::testing::TempDir() + "exec_data_test_" + std::to_string(::getpid()) + "_" + name;
}

TEST(TokenFile, RoundTripsBothWidths) {
  const std::vector<int32_t> tokens = {0, 1, 255, 256, 65535, 7};
  for (int width : {2, 4}) {
    const std::string path = TempPath("rt" + std::to_string(width));
    ASSERT_TRUE(WriteTokenFile(path, tokens, width).ok());
    Result<std::string> bytes = ReadFile(path);
    ASSERT_TRUE(bytes.ok());
    EXPECT_EQ(bytes->size(), kTokenFileHeaderBytes + tokens.size() * width);
    EXPECT_EQ(bytes->substr(0, 8), "MSTOKENS");
    // Little-endian: token 3 (256) is bytes 00 01.
    EXPECT_EQ(static_cast<uint8_t>((*bytes)[24 + 3 * width]), 0x00);
    EXPECT_EQ(static_cast<uint8_t>((*bytes)[24 + 3 * width + 1]), 0x01);
    Result<std::vector<int32_t>> back = ReadTokenFile(path);
    ASSERT_TRUE(back.ok()) << back.status().message();
    EXPECT_EQ(*back, tokens);
    std::remove(path.c_str());
  }
}

TEST(TokenFile, MissingFileIsNotFoundNamingThePath) {
  const std::string path = TempPath("no_such_file");
  Result<std::vector<int32_t>> r = ReadTokenFile(path);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Status::Code::kNotFound);
  EXPECT_NE(r.status().message().find(path), std::string::npos) << r.status().message();
}

TEST(TokenFile, WrongHeaderIsInvalidInput) {
  const std::string path = TempPath("bad_header");
  ASSERT_TRUE(WriteFileAtomically(path, "It is a truth universally acknowledged").ok());
  Result<std::vector<int32_t>> r = ReadTokenFile(path);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Status::Code::kInvalidInput);
  EXPECT_NE(r.status().message().find(path), std::string::npos);
  EXPECT_NE(r.status().message().find("MSTOKENS"), std::string::npos);
  std::remove(path.c_str());
}

TEST(TokenFile, CutFileAndBadWidthAreInvalidInput) {
  const std::string path = TempPath("cut");
  ASSERT_TRUE(WriteTokenFile(path, {1, 2, 3, 4}).ok());
  std::string bytes = *ReadFile(path);
  ASSERT_TRUE(WriteFileAtomically(path, bytes.substr(0, bytes.size() - 1)).ok());
  Result<std::vector<int32_t>> cut = ReadTokenFile(path);
  ASSERT_FALSE(cut.ok());
  EXPECT_EQ(cut.status().code(), Status::Code::kInvalidInput);
  EXPECT_NE(cut.status().message().find("header says 4 tokens"), std::string::npos) << cut.status().message();

  bytes[12] = 3;  // bytes per token = 3
  ASSERT_TRUE(WriteFileAtomically(path, bytes).ok());
  Result<std::vector<int32_t>> width = ReadTokenFile(path);
  ASSERT_FALSE(width.ok());
  EXPECT_EQ(width.status().code(), Status::Code::kInvalidInput);
  EXPECT_NE(width.status().message().find("bytes per token = 3"), std::string::npos);
  std::remove(path.c_str());
}

TEST(TokenFile, TokenTooWideForUint16IsRejectedAndNothingWritten) {
  const std::string path = TempPath("wide");
  Status s = WriteTokenFile(path, {1, 70000});
  EXPECT_EQ(s.code(), Status::Code::kInvalidInput);
  EXPECT_NE(s.message().find("token 1 = 70000"), std::string::npos) << s.message();
  EXPECT_FALSE(ReadFile(path).ok());
}

TEST(Corpus, ShippedCorpusIsByteTokensOfEnglishText) {
  Result<std::vector<int32_t>> tokens = ByteTokensOfFile(std::string(MEGASCALE_SOURCE_DIR) + "/" + kShippedCorpus);
  ASSERT_TRUE(tokens.ok()) << tokens.status().message();
  EXPECT_GT(tokens->size(), 4000u);
  EXPECT_EQ((*tokens)[0], 'P');
  const double h = UnigramEntropyNats(*tokens, kByteVocab);
  // English letter statistics: about 4.1-4.5 bits per character, i.e. 2.8-3.1 nats; far below
  // the uniform log(256) = 5.55.
  EXPECT_GT(h, 2.7);
  EXPECT_LT(h, 3.3);
}

TEST(Corpus, MissingCorpusIsNotFound) {
  Result<std::vector<int32_t>> r = ByteTokensOfFile("/nonexistent/corpus.txt");
  EXPECT_EQ(r.status().code(), Status::Code::kNotFound);
  EXPECT_NE(r.status().message().find("/nonexistent/corpus.txt"), std::string::npos);
}

TEST(Corpus, UnigramEntropyByHand) {
  // Two symbols, equally often: log 2. One symbol: 0.
  EXPECT_NEAR(UnigramEntropyNats({1, 2, 1, 2}, 4), std::log(2.0), 1e-12);
  EXPECT_EQ(UnigramEntropyNats({3, 3, 3}, 4), 0.0);
}

std::vector<int32_t> Ramp(int n, int vocab) {
  std::vector<int32_t> t(n);
  for (int i = 0; i < n; ++i) t[i] = i % vocab;
  return t;
}

TEST(BatchSampler, TargetsAreTheNextTokens) {
  // A ramp stream: every target is its input + 1 (mod vocab), wherever the window starts.
  Result<BatchSampler> s = BatchSampler::Create(Ramp(1000, 97), 3, 16, 97, 5);
  ASSERT_TRUE(s.ok());
  std::vector<int32_t> in(48), tg(48);
  s->Sample(0, in.data(), tg.data());
  for (int i = 0; i < 48; ++i) EXPECT_EQ(tg[i], (in[i] + 1) % 97);
  for (int b = 0; b < 3; ++b) {
    for (int t = 1; t < 16; ++t) EXPECT_EQ(in[b * 16 + t], (in[b * 16 + t - 1] + 1) % 97);
  }
}

TEST(BatchSampler, DeterministicFromSeedStepAndRow) {
  auto make = [](uint64_t seed) { return *BatchSampler::Create(Ramp(5000, 1000), 4, 8, 1000, seed); };
  const BatchSampler a = make(1), b = make(1), c = make(2);
  std::vector<int32_t> ia(32), ta(32), ib(32), tb(32), ic(32), tc(32);
  a.Sample(7, ia.data(), ta.data());
  b.Sample(7, ib.data(), tb.data());
  c.Sample(7, ic.data(), tc.data());
  EXPECT_EQ(ia, ib);
  EXPECT_NE(ia, ic);  // another seed, other windows (5000 possible starts: a collision of all 4 is ~0)
  // A row alone (a DP replica's share) is the same row of the full batch.
  std::vector<int32_t> row(8), rowt(8);
  a.SampleRow(7, 2, row.data(), rowt.data());
  EXPECT_EQ(row, std::vector<int32_t>(ia.begin() + 16, ia.begin() + 24));
  // Steps differ.
  a.Sample(8, ib.data(), tb.data());
  EXPECT_NE(ia, ib);
}

TEST(BatchSampler, RejectsBadInput) {
  EXPECT_EQ(BatchSampler::Create(Ramp(10, 5), 1, 10, 5, 0).status().code(), Status::Code::kInvalidInput);
  Result<BatchSampler> oov = BatchSampler::Create({1, 2, 300, 4}, 1, 2, 256, 0);
  ASSERT_FALSE(oov.ok());
  EXPECT_NE(oov.status().message().find("token 2 = 300"), std::string::npos) << oov.status().message();
  EXPECT_FALSE(BatchSampler::Create(Ramp(10, 5), 0, 2, 5, 0).ok());
}

}  // namespace
}  // namespace exec
}  // namespace megascale
