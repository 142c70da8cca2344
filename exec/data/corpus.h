// The shipped corpus and byte-level tokens.
//
// exec/data/pride_and_prejudice_ch1.txt is Chapter 1 of Jane Austen's "Pride and Prejudice" (1813,
// public domain), about 4.4 KB of ASCII, typed in from memory for this repository (it may differ
// from a printed edition in small details; nothing depends on that). Byte-level tokens: token =
// byte value, vocabulary 256, so no tokenizer is needed and any text file is a corpus.
// Thread-safe (no shared state).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"

namespace megascale {
namespace exec {

// Relative to the repository root.
constexpr const char* kShippedCorpus = "exec/data/pride_and_prejudice_ch1.txt";
constexpr int kByteVocab = 256;

// One token per byte. NotFound names the path when the file is missing.
Result<std::vector<int32_t>> ByteTokensOfFile(const std::string& path);

// The training data of a run: a token file (exec/data/token_file.h) when the file starts with its magic
// "MSTOKENS", otherwise any file read as byte tokens. NotFound names the path when it is missing.
Result<std::vector<int32_t>> LoadTrainingTokens(const std::string& path);

// The unigram (order-0) entropy of the stream in nats: the cross-entropy of the best model that
// ignores context. Training loss below it shows a model uses its context.
double UnigramEntropyNats(const std::vector<int32_t>& tokens, int vocab);

}  // namespace exec
}  // namespace megascale
