#include "exec/data/corpus.h"

#include <cmath>
#include <fstream>

#include "exec/data/token_file.h"

#include "base/atomic_file.h"

namespace megascale {
namespace exec {

Result<std::vector<int32_t>> ByteTokensOfFile(const std::string& path) {
  Result<std::string> text = ReadFile(path);
  if (!text.ok()) return Status::NotFound("corpus: " + text.status().message());
  std::vector<int32_t> tokens;
  tokens.reserve(text->size());
  for (char ch : *text) tokens.push_back(static_cast<uint8_t>(ch));
  return tokens;
}

Result<std::vector<int32_t>> LoadTrainingTokens(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  char head[8] = {0};
  if (in && in.read(head, sizeof(head)) && std::string(head, sizeof(head)) == "MSTOKENS") {
    return ReadTokenFile(path);
  }
  return ByteTokensOfFile(path);  // NotFound naming the path when it is missing
}

double UnigramEntropyNats(const std::vector<int32_t>& tokens, int vocab) {
  std::vector<double> count(vocab, 0.0);
  for (int32_t t : tokens) count[t] += 1.0;
  double h = 0.0;
  for (double c : count) {
    if (c > 0) {
      const double p = c / tokens.size();
      h -= p * std::log(p);
    }
  }
  return h;
}

}  // namespace exec
}  // namespace megascale
