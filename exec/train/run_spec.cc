#include "exec/train/run_spec.h"

#include <unistd.h>

#include <climits>

#include "exec/data/corpus.h"

namespace megascale {
namespace exec {
namespace {

bool Exists(const std::string& path) { return ::access(path.c_str(), R_OK) == 0; }

// The folder of the running binary ("" when /proc is not there).
std::string BinaryDir() {
  char buf[PATH_MAX];
  const ssize_t n = ::readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  if (n <= 0) return "";
  std::string path(buf, static_cast<size_t>(n));
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? "" : path.substr(0, slash);
}

}  // namespace

std::string ShippedCorpusPath() {
  for (std::string dir = BinaryDir(); !dir.empty(); dir = dir.substr(0, dir.rfind('/'))) {
    const std::string candidate = dir + "/" + kShippedCorpus;
    if (Exists(candidate)) return candidate;
    if (dir.find('/') == std::string::npos) break;
  }
  return kShippedCorpus;  // relative to the working directory (the repository root, when run from it)
}

RunOptions RunOptionsFromSpec(const RunSpec& run) {
  RunOptions o;
  o.corpus = run.corpus().empty() ? ShippedCorpusPath() : run.corpus();
  o.param_seed = run.param_seed();
  o.data_seed = run.data_seed();
  o.hyper.lr = static_cast<float>(run.lr());
  o.hyper.beta1 = static_cast<float>(run.beta1());
  o.hyper.beta2 = static_cast<float>(run.beta2());
  o.hyper.eps = static_cast<float>(run.eps());
  o.hyper.weight_decay = static_cast<float>(run.weight_decay());
  o.clip_norm = static_cast<float>(run.clip_norm());
  o.data.prefetch = run.prefetch();
  o.data.one_reader_per_node = run.one_reader_per_node();
  return o;
}

}  // namespace exec
}  // namespace megascale
