// Rules and defaults of the cluster block.
#include "planner/spec/validate_util.h"

#include <set>

#include "planner/plan.pb.h"
#include "planner/spec/op_kinds.h"
#include "topology/hardware.h"

namespace megascale::validation {
namespace {

// What a real cluster can have, with room: 3.2 Tbit/s NICs and switch ports; 1,024 ports on a
// switch (the widest today have 512 x 100G).
constexpr double kMaxGbps = 3200;
constexpr int kMaxPorts = 1024;

// NCCL's channel limit (MAXCHANNELS) and the chunk sizes its buffers allow.
constexpr int kMaxChannels = 32;
constexpr int64_t kMinChunkBytes = 1 << 10;
constexpr int64_t kMaxChunkBytes = int64_t{64} << 20;

Status ResolveCollectives(CollectiveSpec* c) {
  MS_CHECK_FIELD(CollectiveSpec::Algorithm_IsValid(c->algorithm()), "cluster.collectives.algorithm",
                 static_cast<int>(c->algorithm()), "must be AUTO, RING or TREE");
  MS_CHECK_FIELD(c->channels() >= 1 && c->channels() <= kMaxChannels,
                 "cluster.collectives.channels", c->channels(),
                 "must be between 1 and " + Num(kMaxChannels) + " (NCCL's MAXCHANNELS)");
  MS_CHECK_FIELD(c->chunk_bytes() >= kMinChunkBytes && c->chunk_bytes() <= kMaxChunkBytes,
                 "cluster.collectives.chunk_bytes", c->chunk_bytes(),
                 "must be between 1024 (1 KiB) and 67108864 (64 MiB)");
  MS_CHECK_FIELD(CollectiveSpec::Protocol_IsValid(c->protocol()), "cluster.collectives.protocol",
                 static_cast<int>(c->protocol()), "must be PROTOCOL_AUTO, LL, LL128 or SIMPLE");
  c->set_algorithm(c->algorithm());
  c->set_protocol(c->protocol());
  c->set_channels(c->channels());
  c->set_chunk_bytes(c->chunk_bytes());
  return Status::Ok();
}

// A measured device's calibration block (cluster.calibration_file): every figure in range.
Status ResolveCalibration(DeviceCalibration* d) {
  const std::string f = "cluster.calibration.";
  const std::string measured = "a measured figure: rerun `megascale calibrate`";
  MS_CHECK_FIELD(d->peak_tflops() > 0 && d->peak_tflops() <= 1e5, f + "peak_tflops", d->peak_tflops(),
                 "must be > 0 and at most 1e5 (" + measured + ")");
  MS_CHECK_FIELD(d->hbm_gbytes_per_s() > 0 && d->hbm_gbytes_per_s() <= 1e6, f + "hbm_gbytes_per_s",
                 d->hbm_gbytes_per_s(), "must be > 0 and at most 1e6 (" + measured + ")");
  MS_CHECK_FIELD(d->hbm_gb() > 0 && d->hbm_gb() <= 1e5, f + "hbm_gb", d->hbm_gb(),
                 "must be > 0 and at most 1e5 (" + measured + ")");
  MS_CHECK_FIELD(d->link_gbytes_per_s() > 0 && d->link_gbytes_per_s() <= 1e5, f + "link_gbytes_per_s",
                 d->link_gbytes_per_s(), "must be > 0 and at most 1e5 (" + measured + ")");
  MS_CHECK_RANGE(d->link_latency_us(), 0.0, 1e6, f + "link_latency_us", "µs");
  for (const auto& [name, value] :
       {std::pair<const char*, double>{"gemm_efficiency", d->gemm_efficiency()},
        {"attention_efficiency", d->attention_efficiency()},
        {"network_efficiency", d->network_efficiency()},
        {"hbm_efficiency", d->hbm_efficiency()},
        {"nvlink_efficiency", d->nvlink_efficiency()}}) {
    MS_CHECK_FIELD(value > 0 && value <= 10, f + name, value, "must be > 0 and at most 10");
  }
  for (const auto& [name, value] :
       {std::pair<const char*, double>{"network_step_latency_s", d->network_step_latency_s()},
        {"step_overhead_s", d->step_overhead_s()},
        {"kernel_overhead_s", d->kernel_overhead_s()},
        {"data_loading_s", d->data_loading_s()}}) {
    MS_CHECK_RANGE(value, 0.0, 1e3, f + name, "seconds");
  }
  MS_CHECK_RANGE(d->overlap_slowdown(), 0.0, 0.99, f + "overlap_slowdown", "a fraction");
  MS_CHECK_RANGE(d->sms(), 0, 100000, f + "sms", "0 = no SM waves (a CPU)");
  for (int i = 0; i < d->op_scale_size(); ++i) {
    const OpTimeScale& s = d->op_scale(i);
    const std::string field = f + "op_scale[" + Num(i) + "]";
    OpKind kind;
    MS_CHECK_FIELD(OpKind_Parse(s.kind(), &kind), field + ".kind", "\"" + s.kind() + "\"",
                   "must be an OpKind name of planner/plan.proto (QKV_GEMM, GELU, TP_ALL_GATHER, ...)");
    MS_CHECK_FIELD(s.factor() > 0 && s.factor() <= 1e6, field + ".factor", s.factor(),
                   "must be > 0 and at most 1e6");
    MS_CHECK_RANGE(s.group_size(), 0, kMaxGpus, field + ".group_size", "0 = any size");
  }
  for (int i = 0; i < d->comm_cpu_size(); ++i) {
    const OpCpuShare& t = d->comm_cpu(i);
    const std::string field = f + "comm_cpu[" + Num(i) + "]";
    OpKind kind;
    MS_CHECK_FIELD(OpKind_Parse(t.kind(), &kind) &&
                       (OpKindOf(kind).cls == OpClass::kPp || OpKindOf(kind).cls == OpClass::kDp),
                   field + ".kind", "\"" + t.kind() + "\"",
                   "must name a PP or DP op kind of planner/plan.proto (PP_SEND, PP_RECV, DP_REDUCE_SCATTER, ...)");
    MS_CHECK_RANGE(t.share(), 0.0, 1.0, field + ".share", "a core's share while the op is in flight");
    MS_CHECK_RANGE(t.op_s(), 0.0, 1.0, field + ".op_s", "seconds of one core per op");
  }
  MS_CHECK_RANGE(d->host_cpu_per_op_s(), 0.0, 1.0, f + "host_cpu_per_op_s", "seconds of one core per op");
  std::set<int> pooled;
  for (int i = 0; i < d->core_pool_size(); ++i) {
    const CorePool& p = d->core_pool(i);
    const std::string field = f + "core_pool[" + Num(i) + "]";
    MS_CHECK_RANGE(p.cores(), 1, 1 << 20, field + ".cores", "the cores the pool's ranks share");
    MS_CHECK_FIELD(p.ranks_size() > 0, field + ".ranks", p.ranks_size(), "must list the ranks that share the cores (it lists none)");
    for (int r : p.ranks()) {
      MS_CHECK_RANGE(r, 0, kMaxGpus - 1, field + ".ranks", "a rank of the calibrated world");
      MS_CHECK_FIELD(pooled.insert(r).second, field + ".ranks", r, "must not be in another pool too");
    }
  }
  return Status::Ok();
}

}  // namespace

Status ResolveCluster(ClusterSpec* c) {
  auto gpu = topology::LookupGpu(c->gpu());
  if (!gpu.ok()) {
    std::string known;
    for (const auto& n : topology::KnownGpus()) known += (known.empty() ? "" : ", ") + n;
    return Status::BadField("cluster.gpu", "\"" + c->gpu() + "\"", "must be one of " + known);
  }
  MS_CHECK_RANGE(c->num_gpus(), 1, kMaxGpus, "cluster.num_gpus", "a million GPUs at most");
  MS_CHECK_FIELD(c->gpus_per_node() >= 1 && c->gpus_per_node() <= 16, "cluster.gpus_per_node",
                 c->gpus_per_node(), "must be between 1 and 16");
  MS_CHECK_FIELD(c->num_gpus() % c->gpus_per_node() == 0, "cluster.num_gpus", c->num_gpus(),
                 "must be a multiple of cluster.gpus_per_node (" + Num(c->gpus_per_node()) + ")");
  MS_CHECK_RANGE(c->nic_gbps(), 1e-3, kMaxGbps, "cluster.nic_gbps", "Gbit/s");
  MS_CHECK_FIELD(c->nics_per_node() >= 0 && c->nics_per_node() <= c->gpus_per_node(),
                 "cluster.nics_per_node", c->nics_per_node(),
                 "must be between 0 (one per GPU) and cluster.gpus_per_node (" +
                     Num(c->gpus_per_node()) + ")");
  if (c->nics_per_node() == 0) c->set_nics_per_node(c->gpus_per_node());
  MS_CHECK_FIELD(c->gpus_per_node() % c->nics_per_node() == 0, "cluster.nics_per_node",
                 c->nics_per_node(), "must divide cluster.gpus_per_node (" + Num(c->gpus_per_node()) + ")");
  MS_CHECK_RANGE(c->switch_port_gbps(), 1e-3, kMaxGbps, "cluster.switch_port_gbps", "Gbit/s");
  MS_CHECK_RANGE(c->nodes_per_tor(), 1, kMaxPorts, "cluster.nodes_per_tor", "a switch's ports");
  MS_CHECK_RANGE(c->tors_per_pod(), 1, kMaxPorts, "cluster.tors_per_pod", "a switch's ports");
  MS_CHECK_RANGE(c->link_latency_us(), 0.0, 1e6, "cluster.link_latency_us", "µs");
  MS_CHECK_RANGE(c->nvlink_latency_us(), 0.0, 1e6, "cluster.nvlink_latency_us", "µs");
  MS_CHECK_RANGE(c->nvlink_gbytes_per_s(), 0.0, 1e5, "cluster.nvlink_gbytes_per_s",
                 "0 = the GPU's catalogue figure");
  MS_CHECK_RANGE(c->peak_tflops(), 0.0, 1e5, "cluster.peak_tflops", "0 = the GPU's catalogue figure");
  MS_CHECK_RANGE(c->hbm_gb(), 0.0, 1e5, "cluster.hbm_gb", "0 = catalogue");
  MS_CHECK_RANGE(c->hbm_gbytes_per_s(), 0.0, 1e6, "cluster.hbm_gbytes_per_s", "0 = catalogue");
  MS_RETURN_IF_ERROR(ResolveCollectives(c->mutable_collectives()));
  MS_CHECK_FIELD(c->has_calibration() || !gpu->measured_only(), "cluster.calibration_file",
                 "\"" + c->calibration_file() + "\"",
                 "must name the file `megascale calibrate` wrote: gpu \"" + c->gpu() +
                     "\" has no catalogue figures");
  if (c->has_calibration()) {
    // A measured device: its figures replace the catalogue's, unless the scenario sets them.
    DeviceCalibration* d = c->mutable_calibration();
    MS_RETURN_IF_ERROR(ResolveCalibration(d));
    if (c->peak_tflops() == 0) c->set_peak_tflops(d->peak_tflops());
    if (c->hbm_gb() == 0) c->set_hbm_gb(d->hbm_gb());
    if (c->hbm_gbytes_per_s() == 0) c->set_hbm_gbytes_per_s(d->hbm_gbytes_per_s());
    if (c->nvlink_gbytes_per_s() == 0) c->set_nvlink_gbytes_per_s(d->link_gbytes_per_s());
    if (!c->has_nvlink_latency_us()) c->set_nvlink_latency_us(d->link_latency_us());
  }
  if (c->peak_tflops() == 0) c->set_peak_tflops(gpu->peak_flops / 1e12);
  if (c->hbm_gb() == 0) c->set_hbm_gb(gpu->hbm_bytes / 1e9);
  if (c->hbm_gbytes_per_s() == 0) c->set_hbm_gbytes_per_s(gpu->hbm_bytes_per_s / 1e9);
  if (c->nvlink_gbytes_per_s() == 0) c->set_nvlink_gbytes_per_s(gpu->nvlink_bytes_per_s / 1e9);
  // Write every defaulted field explicitly so a resolved scenario prints completely.
  c->set_gpu(c->gpu());
  c->set_num_gpus(c->num_gpus());
  c->set_gpus_per_node(c->gpus_per_node());
  c->set_fabric(c->fabric());
  c->set_nic_gbps(c->nic_gbps());
  c->set_nics_per_node(c->nics_per_node());
  c->set_switch_port_gbps(c->switch_port_gbps());
  c->set_split_tor_ports(c->split_tor_ports());
  c->set_nodes_per_tor(c->nodes_per_tor());
  c->set_tors_per_pod(c->tors_per_pod());
  c->set_link_latency_us(c->link_latency_us());
  c->set_nvlink_latency_us(c->nvlink_latency_us());
  return Status::Ok();
}

}  // namespace megascale::validation
