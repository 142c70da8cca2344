#include "exec/runtime/device_factory.h"

#include <cstdlib>

#include "exec/runtime/mpi_communicator.h"

#ifdef MEGASCALE_HAVE_CUDA
#include <dlfcn.h>
#include <unistd.h>

#include <vector>

#include "exec/runtime/cuda_plugin.h"
#endif

namespace megascale {
namespace exec {
namespace {

Status NoSuchKind(const std::string& kind) {
  return Status::BadField("run.device", kind, "must be \"cpu\" or \"cuda\"");
}

}  // namespace

#ifndef MEGASCALE_HAVE_CUDA
namespace {

Status NotBuilt() {
  return Status::BadField("run.device", "cuda",
                          "this megascale was built without CUDA (no nvcc found at configure time); "
                          "use \"cpu\" or rebuild with the CUDA Toolkit on PATH");
}

}  // namespace

bool CudaBuilt() { return false; }

Result<Device*> OpenDevice(const std::string& kind, int local_rank) {
  (void)local_rank;
  if (kind == "cpu") return CpuDevice();
  if (kind == "cuda") return NotBuilt();
  return NoSuchKind(kind);
}

Result<std::unique_ptr<Communicator>> OpenWorldFor(const std::string& kind) {
  if (kind == "cpu") return OpenWorld();
  if (kind == "cuda") return NotBuilt();
  return NoSuchKind(kind);
}
#else
namespace {

// The plugin's path: $MEGASCALE_CUDA_PLUGIN, else beside the running binary, else where this
// build put it (tests run from other folders).
std::vector<std::string> PluginCandidates() {
  std::vector<std::string> paths;
  if (const char* env = std::getenv("MEGASCALE_CUDA_PLUGIN")) paths.emplace_back(env);
  char exe[4096];
  const ssize_t n = ::readlink("/proc/self/exe", exe, sizeof(exe) - 1);
  if (n > 0) {
    std::string dir(exe, static_cast<size_t>(n));
    dir = dir.substr(0, dir.find_last_of('/') + 1);
    paths.push_back(dir + "libmegascale_cuda.so");
  }
  paths.emplace_back(MEGASCALE_CUDA_PLUGIN_PATH);
  return paths;
}

// Loads exec/runtime/cuda_plugin.h's library once per process; the handle is never closed.
Result<const CudaPlugin*> Plugin() {
  static const CudaPlugin* loaded = nullptr;
  if (loaded != nullptr) return loaded;
  std::string errors;
  for (const std::string& path : PluginCandidates()) {
    void* handle = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) {
      errors += std::string(errors.empty() ? "" : "; ") + ::dlerror();
      continue;
    }
    using Entry = const CudaPlugin* (*)();
    auto entry = reinterpret_cast<Entry>(::dlsym(handle, "megascale_cuda_plugin"));
    if (entry == nullptr || entry()->version != CudaPlugin::kVersion) {
      return Status::BadField("run.device", "cuda",
                              path + " is not this build's CUDA plugin (rebuild megascale)");
    }
    loaded = entry();
    return loaded;
  }
  return Status::BadField("run.device", "cuda",
                          "the CUDA plugin could not be loaded (" + errors +
                              "); set MEGASCALE_CUDA_PLUGIN to libmegascale_cuda.so or use \"cpu\"");
}

}  // namespace

bool CudaBuilt() { return true; }

Result<Device*> OpenDevice(const std::string& kind, int local_rank) {
  if (kind == "cpu") return CpuDevice();
  if (kind != "cuda") return NoSuchKind(kind);
  MS_ASSIGN_OR_RETURN(const CudaPlugin* plugin, Plugin());
  return plugin->open_device(local_rank);
}

Result<std::unique_ptr<Communicator>> OpenWorldFor(const std::string& kind) {
  if (kind == "cpu") return OpenWorld();
  if (kind != "cuda") return NoSuchKind(kind);
  MS_ASSIGN_OR_RETURN(const CudaPlugin* plugin, Plugin());
  MS_ASSIGN_OR_RETURN(std::unique_ptr<Communicator> host, OpenWorld());
  return plugin->open_world(std::move(host), LocalRank());
}
#endif

int LocalRank() {
  for (const char* name : {"OMPI_COMM_WORLD_LOCAL_RANK", "SLURM_LOCALID", "MPI_LOCALRANKID"}) {
    if (const char* v = std::getenv(name)) return std::atoi(v);
  }
  return 0;
}

}  // namespace exec
}  // namespace megascale
