#include "planner/validate.h"

#include <cstdio>
#include <set>
#include <string>

#include "planner/model_presets.h"
#include "topology/hardware.h"

namespace megascale {
namespace {

std::string Num(double v) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%g", v);
  return buf;
}
std::string Num(int64_t v) { return std::to_string(v); }
std::string Num(int v) { return std::to_string(v); }

#define MS_CHECK_FIELD(cond, field, value, rule) \
  do {                                           \
    if (!(cond)) return Status::BadField(field, Num(value), rule); \
  } while (0)

Status ResolveCluster(ClusterSpec* c) {
  auto gpu = topology::LookupGpu(c->gpu());
  if (!gpu.ok()) {
    std::string known;
    for (const auto& n : topology::KnownGpus()) known += (known.empty() ? "" : ", ") + n;
    return Status::BadField("cluster.gpu", "\"" + c->gpu() + "\"", "must be one of " + known);
  }
  MS_CHECK_FIELD(c->num_gpus() > 0, "cluster.num_gpus", c->num_gpus(), "must be > 0");
  MS_CHECK_FIELD(c->gpus_per_node() >= 1 && c->gpus_per_node() <= 16, "cluster.gpus_per_node",
                 c->gpus_per_node(), "must be between 1 and 16");
  MS_CHECK_FIELD(c->num_gpus() % c->gpus_per_node() == 0, "cluster.num_gpus", c->num_gpus(),
                 "must be a multiple of cluster.gpus_per_node (" + Num(c->gpus_per_node()) + ")");
  MS_CHECK_FIELD(c->nic_gbps() > 0, "cluster.nic_gbps", c->nic_gbps(), "must be > 0");
  MS_CHECK_FIELD(c->nics_per_node() >= 0 && c->nics_per_node() <= c->gpus_per_node(),
                 "cluster.nics_per_node", c->nics_per_node(),
                 "must be between 0 (one per GPU) and cluster.gpus_per_node (" +
                     Num(c->gpus_per_node()) + ")");
  if (c->nics_per_node() == 0) c->set_nics_per_node(c->gpus_per_node());
  MS_CHECK_FIELD(c->gpus_per_node() % c->nics_per_node() == 0, "cluster.nics_per_node",
                 c->nics_per_node(), "must divide cluster.gpus_per_node (" + Num(c->gpus_per_node()) + ")");
  MS_CHECK_FIELD(c->switch_port_gbps() > 0, "cluster.switch_port_gbps", c->switch_port_gbps(),
                 "must be > 0");
  MS_CHECK_FIELD(c->nodes_per_tor() > 0, "cluster.nodes_per_tor", c->nodes_per_tor(), "must be > 0");
  MS_CHECK_FIELD(c->tors_per_pod() > 0, "cluster.tors_per_pod", c->tors_per_pod(), "must be > 0");
  MS_CHECK_FIELD(c->link_latency_us() >= 0, "cluster.link_latency_us", c->link_latency_us(),
                 "must be >= 0");
  MS_CHECK_FIELD(c->nvlink_latency_us() >= 0, "cluster.nvlink_latency_us", c->nvlink_latency_us(),
                 "must be >= 0");
  MS_CHECK_FIELD(c->nvlink_gbytes_per_s() >= 0, "cluster.nvlink_gbytes_per_s",
                 c->nvlink_gbytes_per_s(), "must be >= 0 (0 = the GPU's catalogue figure)");
  MS_CHECK_FIELD(c->peak_tflops() >= 0, "cluster.peak_tflops", c->peak_tflops(),
                 "must be >= 0 (0 = the GPU's catalogue figure)");
  MS_CHECK_FIELD(c->hbm_gb() >= 0, "cluster.hbm_gb", c->hbm_gb(), "must be >= 0 (0 = catalogue)");
  MS_CHECK_FIELD(c->hbm_gbytes_per_s() >= 0, "cluster.hbm_gbytes_per_s", c->hbm_gbytes_per_s(),
                 "must be >= 0 (0 = catalogue)");
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

Status ResolveModel(ModelSpec* m) {
  if (!m->preset().empty()) {
    auto preset = LookupModelPreset(m->preset());
    if (!preset.ok()) {
      std::string known;
      for (const auto& n : KnownModelPresets()) known += (known.empty() ? "" : ", ") + n;
      return Status::BadField("model.preset", "\"" + m->preset() + "\"", "must be one of " + known);
    }
    ModelSpec merged = *preset;
    merged.MergeFrom(*m);  // fields the user set beside the preset override it
    *m = merged;
  }
  const char* required[] = {"layers", "hidden", "heads", "seq_len", "vocab"};
  const bool present[] = {m->has_layers(), m->has_hidden(), m->has_heads(), m->has_seq_len(),
                          m->has_vocab()};
  for (int i = 0; i < 5; ++i) {
    if (!present[i]) {
      return Status::InvalidInput(std::string("model.") + required[i] +
                                  " is missing: set it, or name a model.preset that sets it");
    }
  }
  MS_CHECK_FIELD(m->layers() > 0, "model.layers", m->layers(), "must be > 0");
  MS_CHECK_FIELD(m->hidden() > 0, "model.hidden", m->hidden(), "must be > 0");
  MS_CHECK_FIELD(m->heads() > 0, "model.heads", m->heads(), "must be > 0");
  MS_CHECK_FIELD(m->hidden() % m->heads() == 0, "model.hidden", m->hidden(),
                 "must be a multiple of model.heads (" + Num(m->heads()) + ")");
  MS_CHECK_FIELD(m->seq_len() > 0, "model.seq_len", m->seq_len(), "must be > 0");
  MS_CHECK_FIELD(m->vocab() > 0, "model.vocab", m->vocab(), "must be > 0");
  MS_CHECK_FIELD(m->kv_heads() >= 0, "model.kv_heads", m->kv_heads(), "must be >= 0 (0 = heads)");
  if (m->kv_heads() == 0) m->set_kv_heads(m->heads());
  MS_CHECK_FIELD(m->heads() % m->kv_heads() == 0, "model.kv_heads", m->kv_heads(),
                 "must divide model.heads (" + Num(m->heads()) + ")");
  MS_CHECK_FIELD(m->ffn_hidden() >= 0, "model.ffn_hidden", m->ffn_hidden(), "must be >= 0 (0 = 4 x hidden)");
  if (m->ffn_hidden() == 0) m->set_ffn_hidden(4 * m->hidden());
  MS_CHECK_FIELD(m->sliding_window() >= 0 && m->sliding_window() <= m->seq_len(),
                 "model.sliding_window", m->sliding_window(),
                 "must be between 0 (full attention) and model.seq_len (" + Num(m->seq_len()) + ")");
  m->set_parallel_block(m->parallel_block());
  m->set_sliding_window(m->sliding_window());
  return Status::Ok();
}

Status ResolveLayout(const ClusterSpec& c, const ModelSpec& m, LayoutSpec* l) {
  MS_CHECK_FIELD(l->tp() > 0, "layout.tp", l->tp(), "must be > 0");
  MS_CHECK_FIELD(l->pp() > 0, "layout.pp", l->pp(), "must be > 0");
  MS_CHECK_FIELD(l->dp() > 0, "layout.dp", l->dp(), "must be > 0");
  const int64_t product = static_cast<int64_t>(l->tp()) * l->pp() * l->dp();
  if (product != c.num_gpus()) {
    return Status::InvalidInput("layout.tp x layout.pp x layout.dp = " + Num(l->tp()) + " x " +
                                Num(l->pp()) + " x " + Num(l->dp()) + " = " + Num(product) +
                                ": must equal cluster.num_gpus (" + Num(c.num_gpus()) + ")");
  }
  MS_CHECK_FIELD(m.heads() % l->tp() == 0, "layout.tp", l->tp(),
                 "must divide model.heads (" + Num(m.heads()) + ")");
  MS_CHECK_FIELD(m.kv_heads() % l->tp() == 0, "layout.tp", l->tp(),
                 "must divide model.kv_heads (" + Num(m.kv_heads()) + ")");
  MS_CHECK_FIELD(l->tp() <= c.gpus_per_node() && c.gpus_per_node() % l->tp() == 0, "layout.tp",
                 l->tp(),
                 "must divide cluster.gpus_per_node (" + Num(c.gpus_per_node()) +
                     "): tensor parallelism stays inside one NVSwitch node");
  MS_CHECK_FIELD(l->virtual_stages() >= 1, "layout.virtual_stages", l->virtual_stages(), "must be >= 1");
  if (l->virtual_stages() > 1 && l->schedule() != INTERLEAVED_1F1B) {
    return Status::BadField("layout.virtual_stages", Num(l->virtual_stages()),
                            "values > 1 need layout.schedule: INTERLEAVED_1F1B");
  }
  const int64_t chunks = static_cast<int64_t>(l->pp()) * l->virtual_stages();
  if (m.layers() % chunks != 0) {
    return Status::InvalidInput("layout.pp x layout.virtual_stages = " + Num(chunks) +
                                ": must divide model.layers (" + Num(m.layers()) +
                                ") so every model chunk has the same layers");
  }
  MS_CHECK_FIELD(l->zero_stage() >= 0 && l->zero_stage() <= 2, "layout.zero_stage", l->zero_stage(),
                 "must be 0, 1 or 2");
  // Write defaults explicitly so a resolved scenario prints completely.
  l->set_tp(l->tp());
  l->set_pp(l->pp());
  l->set_dp(l->dp());
  l->set_virtual_stages(l->virtual_stages());
  l->set_sequence_parallel(l->sequence_parallel());
  l->set_zero_stage(l->zero_stage());
  l->set_schedule(l->schedule());
  l->set_recompute(l->recompute());
  l->set_rank_order(l->rank_order());
  OverlapSpec* o = l->mutable_overlap();
  o->set_dp(o->dp());
  o->set_pp(o->pp());
  o->set_tp(o->tp());
  return Status::Ok();
}

Status ResolveTraining(const LayoutSpec& l, TrainingSpec* t) {
  MS_CHECK_FIELD(t->global_batch() > 0, "training.global_batch", t->global_batch(), "must be > 0");
  MS_CHECK_FIELD(t->micro_batch() > 0, "training.micro_batch", t->micro_batch(), "must be > 0");
  MS_CHECK_FIELD(t->steps() >= 1 && t->steps() <= 1000000, "training.steps", t->steps(),
                 "must be between 1 and 1000000");
  const int64_t per_round = static_cast<int64_t>(t->micro_batch()) * l.dp();
  if (t->global_batch() % per_round != 0) {
    return Status::BadField("training.global_batch", Num(t->global_batch()),
                            "must be a multiple of training.micro_batch x layout.dp (" +
                                Num(per_round) + ")");
  }
  const int64_t microbatches = t->global_batch() / per_round;
  if (l.virtual_stages() > 1 && microbatches % l.pp() != 0) {
    return Status::InvalidInput(
        "micro-batches per replica = training.global_batch / (training.micro_batch x layout.dp) = " +
        Num(microbatches) + ": the interleaved schedule needs a multiple of layout.pp (" +
        Num(l.pp()) + ")");
  }
  t->set_global_batch(t->global_batch());
  t->set_micro_batch(t->micro_batch());
  t->set_optimizer(t->optimizer());
  t->set_steps(t->steps());
  return Status::Ok();
}

Status ResolveFaults(const ClusterSpec& c, FaultSpec* f) {
  std::set<int> seen;
  for (int i = 0; i < f->stragglers_size(); ++i) {
    Straggler* s = f->mutable_stragglers(i);
    const std::string field = "faults.stragglers[" + Num(i) + "]";
    if (!s->has_rank()) return Status::InvalidInput(field + ".rank is missing");
    MS_CHECK_FIELD(s->rank() >= 0 && s->rank() < c.num_gpus(), field + ".rank", s->rank(),
                   "must be a rank between 0 and cluster.num_gpus - 1 (" + Num(c.num_gpus() - 1) + ")");
    MS_CHECK_FIELD(s->speed() > 0 && s->speed() <= 1, field + ".speed", s->speed(),
                   "must be in (0, 1]: the GPU's speed relative to a healthy one");
    MS_CHECK_FIELD(seen.insert(s->rank()).second, field + ".rank", s->rank(),
                   "appears twice: give each slow GPU one entry");
    s->set_speed(s->speed());
  }
  for (int i = 0; i < f->failures_size(); ++i) {
    Failure* x = f->mutable_failures(i);
    const std::string field = "faults.failures[" + Num(i) + "]";
    if (!x->has_rank()) return Status::InvalidInput(field + ".rank is missing");
    if (!x->has_time_s()) return Status::InvalidInput(field + ".time_s is missing");
    MS_CHECK_FIELD(x->rank() >= 0 && x->rank() < c.num_gpus(), field + ".rank", x->rank(),
                   "must be a rank between 0 and cluster.num_gpus - 1 (" + Num(c.num_gpus() - 1) + ")");
    MS_CHECK_FIELD(x->time_s() >= 0, field + ".time_s", x->time_s(), "must be >= 0");
    x->set_kind(x->kind());
  }
  return Status::Ok();
}

// Above this size a step with one flow per GPU takes too long on SimGrid 3.32 (docs/simulator.md).
constexpr int kPerGpuFlowsUpTo = 4096;

Status ResolveSim(const ClusterSpec& c, SimSpec* s) {
  MS_CHECK_FIELD(s->collective_timeout_s() > 0, "sim.collective_timeout_s", s->collective_timeout_s(),
                 "must be > 0");
  MS_CHECK_FIELD(s->heartbeat_interval_s() > 0, "sim.heartbeat_interval_s", s->heartbeat_interval_s(),
                 "must be > 0");
  MS_CHECK_FIELD(s->heartbeat_timeout_s() >= s->heartbeat_interval_s(), "sim.heartbeat_timeout_s",
                 s->heartbeat_timeout_s(),
                 "must be >= sim.heartbeat_interval_s (" + Num(s->heartbeat_interval_s()) + ")");
  s->set_seed(s->seed());
  s->set_collective_timeout_s(s->collective_timeout_s());
  s->set_heartbeat_interval_s(s->heartbeat_interval_s());
  s->set_heartbeat_timeout_s(s->heartbeat_timeout_s());
  s->set_progress(s->progress());
  if (s->flows() == FLOWS_AUTO) {
    s->set_flows(c.num_gpus() <= kPerGpuFlowsUpTo ? FLOWS_PER_GPU : FLOWS_PER_GROUP);
  }
  return Status::Ok();
}

Status ResolveOutputs(OutputSpec* o) {
  if (!o->chrome_trace().empty() && o->detail() == TRACE_NONE) {
    return Status::BadField("outputs.chrome_trace", "\"" + o->chrome_trace() + "\"",
                            "needs outputs.detail: TRACE_OPS (a timeline needs per-operator events)");
  }
  o->set_detail(o->detail());
  return Status::Ok();
}

#undef MS_CHECK_FIELD

}  // namespace

Result<Scenario> ResolveScenario(const Scenario& input) {
  Scenario s = input;
  if (!s.has_name() || s.name().empty()) {
    return Status::InvalidInput("name is missing: every scenario needs a short name, e.g. name: \"my-run\"");
  }
  if (!s.has_model()) {
    return Status::InvalidInput("model is missing: add model { preset: \"gpt-175b\" } or give its sizes");
  }
  if (!s.has_cluster()) {
    return Status::InvalidInput("cluster is missing: add cluster { gpu: \"A100\" num_gpus: N }");
  }
  MS_RETURN_IF_ERROR(ResolveCluster(s.mutable_cluster()));
  MS_RETURN_IF_ERROR(ResolveModel(s.mutable_model()));
  MS_RETURN_IF_ERROR(ResolveLayout(s.cluster(), s.model(), s.mutable_layout()));
  MS_RETURN_IF_ERROR(ResolveTraining(s.layout(), s.mutable_training()));
  MS_RETURN_IF_ERROR(ResolveFaults(s.cluster(), s.mutable_faults()));
  MS_RETURN_IF_ERROR(ResolveSim(s.cluster(), s.mutable_sim()));
  MS_RETURN_IF_ERROR(ResolveOutputs(s.mutable_outputs()));
  return s;
}

}  // namespace megascale
