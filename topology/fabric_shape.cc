#include "topology/fabric_shape.h"

#include <algorithm>
#include <cstdio>
#include <cmath>
#include <string>

#include "topology/hardware.h"

namespace megascale::topology {
namespace {

double GbpsToBytesPerS(double gbps) { return gbps * 1e9 / 8; }

int CeilDiv(int a, int b) { return (a + b - 1) / b; }

// Cables of `port_gbps` needed to carry `gbps` (1:1). The epsilon keeps an exact ratio such as
// 64 x 200 / 400 = 32 from rounding up through floating-point noise.
int PortsFor(double gbps, double port_gbps) {
  return std::max(1, static_cast<int>(std::ceil(gbps / port_gbps - 1e-9)));
}

Status CheckPositive(const std::string& field, double value) {
  if (value > 0) return Status::Ok();
  char text[32];
  std::snprintf(text, sizeof(text), "%g", value);
  return Status::BadField("cluster." + field, text, "must be > 0");
}

Status CheckSpec(const ClusterSpec& s) {
  MS_RETURN_IF_ERROR(CheckPositive("num_gpus", s.num_gpus()));
  MS_RETURN_IF_ERROR(CheckPositive("gpus_per_node", s.gpus_per_node()));
  MS_RETURN_IF_ERROR(CheckPositive("nics_per_node", s.nics_per_node()));
  MS_RETURN_IF_ERROR(CheckPositive("nic_gbps", s.nic_gbps()));
  MS_RETURN_IF_ERROR(CheckPositive("switch_port_gbps", s.switch_port_gbps()));
  MS_RETURN_IF_ERROR(CheckPositive("nodes_per_tor", s.nodes_per_tor()));
  MS_RETURN_IF_ERROR(CheckPositive("tors_per_pod", s.tors_per_pod()));
  if (s.num_gpus() % s.gpus_per_node() != 0) {
    return Status::BadField(
        "cluster.num_gpus", std::to_string(s.num_gpus()),
        "must be a multiple of gpus_per_node (" + std::to_string(s.gpus_per_node()) + ")");
  }
  if (s.nics_per_node() > s.gpus_per_node() || s.gpus_per_node() % s.nics_per_node() != 0) {
    return Status::BadField(
        "cluster.nics_per_node", std::to_string(s.nics_per_node()),
        "must divide gpus_per_node (" + std::to_string(s.gpus_per_node()) + ")");
  }
  if (s.link_latency_us() < 0 || s.nvlink_latency_us() < 0 || s.nvlink_gbytes_per_s() < 0) {
    return Status::InvalidInput(
        "cluster.link_latency_us, nvlink_latency_us and nvlink_gbytes_per_s must be >= 0");
  }
  return Status::Ok();
}

}  // namespace

int FabricShape::num_links() const {
  const int cables = num_gpus() /*NVLink*/ + num_gpus() /*PCIe*/ + num_nics() +
                     num_tors * tor_uplinks + num_aggs * agg_uplinks;
  return 2 * cables;
}

Result<FabricShape> ComputeFabricShape(const ClusterSpec& spec) {
  MS_RETURN_IF_ERROR(CheckSpec(spec));
  FabricShape f;
  f.fabric = spec.fabric();
  f.gpus_per_node = spec.gpus_per_node();
  f.num_nodes = spec.num_gpus() / f.gpus_per_node;
  f.nics_per_node = spec.nics_per_node();
  f.gpus_per_nic = f.gpus_per_node / f.nics_per_node;
  f.nodes_per_tor = spec.nodes_per_tor();

  double nvlink_gbytes = spec.nvlink_gbytes_per_s();
  if (nvlink_gbytes == 0) {  // not resolved: take the catalogue's figure
    MS_ASSIGN_OR_RETURN(GpuFigures gpu, LookupGpu(spec.gpu()));
    nvlink_gbytes = gpu.nvlink_bytes_per_s / 1e9;
  }
  f.nvlink_bytes_per_s = nvlink_gbytes * 1e9;
  f.nvlink_latency_s = spec.nvlink_latency_us() * 1e-6;
  f.link_latency_s = spec.link_latency_us() * 1e-6;
  f.port_bytes_per_s = GbpsToBytesPerS(spec.switch_port_gbps());

  if (f.fabric == NONBLOCKING) {
    f.nic_link_bytes_per_s = GbpsToBytesPerS(spec.nic_gbps());
    f.tor_groups = 1;
    f.num_tors = 1;
    return f;
  }

  const double down_port_gbps =
      spec.split_tor_ports() ? spec.switch_port_gbps() / 2 : spec.switch_port_gbps();
  const double nic_link_gbps = std::min(spec.nic_gbps(), down_port_gbps);
  f.nic_link_bytes_per_s = GbpsToBytesPerS(nic_link_gbps);
  f.tor_groups = CeilDiv(f.num_nodes, f.nodes_per_tor);

  if (f.fabric == FAT_TREE) {
    f.num_tors = f.tor_groups;
    if (f.num_tors > 1) {
      f.tor_uplinks =
          PortsFor(f.nodes_per_tor * f.nics_per_node * nic_link_gbps, spec.switch_port_gbps());
      f.num_spines = f.tor_uplinks;
    }
    return f;
  }

  if (f.fabric != RAIL_CLOS) {
    return Status::BadField("cluster.fabric", std::to_string(static_cast<int>(f.fabric)),
                            "must be RAIL_CLOS, FAT_TREE or NONBLOCKING");
  }
  f.rails = f.nics_per_node;
  f.num_tors = f.tor_groups * f.rails;
  f.groups_per_pod = std::max(1, spec.tors_per_pod() / f.rails);
  f.tors_per_pod = f.groups_per_pod * f.rails;
  if (f.num_tors > 1) {  // one ToR alone needs no tier above it
    f.tor_uplinks = PortsFor(f.nodes_per_tor * nic_link_gbps, spec.switch_port_gbps());
    f.num_pods = CeilDiv(f.tor_groups, f.groups_per_pod);
    f.aggs_per_pod = f.tor_uplinks;
    f.num_aggs = f.num_pods * f.aggs_per_pod;
    if (f.num_pods > 1) {
      f.agg_uplinks = f.tors_per_pod;
      f.num_spines = f.aggs_per_pod * f.agg_uplinks;
    }
  }
  return f;
}

}  // namespace megascale::topology
