#include "planner/cost/collective_cost.h"

#include <algorithm>
#include <vector>

#include "planner/spec/op_kinds.h"

namespace megascale {
namespace {

// NCCL's ncclGetBtree: member 0 is the root with one child (the largest power of two below n);
// below it an in-order binary tree in which odd members are leaves.
TreeNode BinaryTreeNode(int n, int rank) {
  TreeNode node;
  int bit = 1;
  while (bit < n && (bit & rank) == 0) bit <<= 1;
  if (rank == 0) {
    if (n > 1) node.children[1] = bit >> 1;
    return node;
  }
  int up = (rank ^ bit) | (bit << 1);
  if (up >= n) up = rank ^ bit;
  node.parent = up;
  int lowbit = bit >> 1;
  node.children[0] = lowbit == 0 ? -1 : rank - lowbit;
  int down1 = lowbit == 0 ? -1 : rank + lowbit;
  while (down1 >= n) {  // the right child may be out of range: take the next lower bit's
    down1 = lowbit == 0 ? -1 : rank + lowbit;
    lowbit >>= 1;
  }
  node.children[1] = down1;
  return node;
}

}  // namespace

namespace {
bool IsAllReduce(OpKind kind) { return OpKindOf(kind).collective == Collective::kAllReduce; }
}  // namespace

double RingVolume(OpKind kind, int members, double bytes) {
  const double share = static_cast<double>(members - 1) / members * bytes;
  return IsAllReduce(kind) ? 2 * share : share;
}

int RingSteps(OpKind kind, int members) {
  return IsAllReduce(kind) ? 2 * (members - 1) : members - 1;
}

const char* NcclProtocolName(NcclProtocol p) {
  switch (p) {
    case NcclProtocol::kLL: return "LL";
    case NcclProtocol::kLL128: return "LL128";
    case NcclProtocol::kSimple: return "Simple";
  }
  return "?";
}

namespace {

// NCCL's figures per protocol (src/graph/tuning.cc, NCCL 2.8-2.14), in microseconds and shares of
// the bus bandwidth. A ring: its base latency, its per-step latency over NVLink and across the
// network, and its share inside a node (LL's is a quarter for all-reduce, a third otherwise: the
// value here is all-reduce's; LL128 0.92, about 120 of its 128-byte lines) and across nodes (LL
// a quarter for every collective; LL128 0.7 with one member per node). A tree across nodes: its
// base latency, its per-hop latency and its share relative to Simple's tree (Simple's own hop is
// the fitted form's: latency + chunk / bandwidth, TreeFillTime).
struct NcclRingFigures {
  NcclProtocol protocol;
  double base_us, nvlink_step_us, net_step_us, node_share, net_share;
};
constexpr NcclRingFigures kNcclRing[] = {{NcclProtocol::kLL, 3.6, 0.47, 2.7, 1.0 / 4, 1.0 / 4},
                                         {NcclProtocol::kLL128, 10.0, 1.9, 4.0, 0.92, 0.7},
                                         {NcclProtocol::kSimple, 8.4, 3.4, 9.6, 1.0, 1.0}};
struct NcclTreeFigures {
  NcclProtocol protocol;
  double base_us, net_hop_us, share;
};
constexpr NcclTreeFigures kNcclTree[] = {{NcclProtocol::kLL, 4.4, 5.0, 1.0 / 3.8},
                                         {NcclProtocol::kLL128, 4.4, 8.5, 0.915}};

const NcclRingFigures& RingFiguresOf(NcclProtocol p) {
  for (const NcclRingFigures& f : kNcclRing) {
    if (f.protocol == p) return f;
  }
  return kNcclRing[2];
}

}  // namespace

NcclRingCost NcclNodeRingTime(OpKind kind, int members, double bytes, double bus_bytes_per_s) {
  NcclRingCost best;
  if (members <= 1 || bytes <= 0) return best;
  const bool all_reduce = IsAllReduce(kind);
  const double steps = RingSteps(kind, members);
  const double volume = RingVolume(kind, members, bytes);
  best.time_s = -1;
  for (const NcclRingFigures& f : kNcclRing) {
    const double share = f.protocol == NcclProtocol::kLL && !all_reduce ? 1.0 / 3 : f.node_share;
    const double t = 1e-6 * (f.base_us + steps * f.nvlink_step_us) + volume / (bus_bytes_per_s * share);
    if (best.time_s < 0 || t < best.time_s) best = {f.protocol, t};
  }
  return best;
}

double RingCollectiveTime(OpKind kind, int members, double bytes, const LinkFigures& link) {
  return NetRingTime(NetRingFigures(NcclProtocol::kSimple), kind, members, bytes, link);
}

TreeNode DoubleTreeNode(int members, int tree, int member) {
  const int n = members;
  if (tree == 0) return BinaryTreeNode(n, member);
  // Tree 1 relabels tree 0: mirrored for even n, shifted by one for odd n (ncclGetDtree).
  const bool shift = n % 2 == 1;
  const auto to_tree0 = [&](int r) { return shift ? (r - 1 + n) % n : n - 1 - r; };
  const auto from_tree0 = [&](int r) { return r < 0 ? -1 : shift ? (r + 1) % n : n - 1 - r; };
  const TreeNode t0 = BinaryTreeNode(n, to_tree0(member));
  TreeNode node;
  node.parent = from_tree0(t0.parent);
  node.children[0] = from_tree0(t0.children[0]);
  node.children[1] = from_tree0(t0.children[1]);
  return node;
}

TreeShape DoubleTreeShape(int members, int members_per_node) {
  TreeShape shape;
  const int per_node = std::max(1, members_per_node);
  if (members <= 1) return shape;
  // Tree 1 is tree 0 relabelled, so the depth is tree 0's; depths by walking up from each member
  // to the first one already known.
  std::vector<int> depth(members, -1), chain;
  depth[0] = 0;
  for (int r = 1; r < members; ++r) {
    int x = r;
    chain.clear();
    while (depth[x] < 0) {
      chain.push_back(x);
      x = BinaryTreeNode(members, x).parent;
    }
    int d = depth[x];
    for (auto it = chain.rbegin(); it != chain.rend(); ++it) depth[*it] = ++d;
  }
  shape.depth = *std::max_element(depth.begin(), depth.end());
  for (int r = 0; r < members; ++r) {
    int net = 0, node = 0;
    for (int t = 0; t < 2; ++t) {
      const TreeNode n = DoubleTreeNode(members, t, r);
      for (int peer : {n.parent, n.children[0], n.children[1]}) {
        if (peer < 0) continue;
        (peer / per_node == r / per_node ? node : net) += 1;
      }
    }
    shape.max_edges = std::max(shape.max_edges, net);
    shape.max_node_edges = std::max(shape.max_node_edges, node);
  }
  return shape;
}

double TreeChunkBytes(double bytes, int channels, double chunk_bytes) {
  return std::min(chunk_bytes, TreeEdgeBytes(bytes) / std::max(1, channels));
}

double TreeFillTime(int depth, double chunk, const LinkFigures& link) {
  return 2.0 * depth * (link.latency_s + chunk / link.bandwidth_bytes_per_s);
}

double TreeAllReduceTime(int members, double bytes, int channels, double chunk_bytes,
                         const LinkFigures& link) {
  return NetTreeTime(NetTreeFigures(NcclProtocol::kSimple), members, bytes, channels, chunk_bytes, link);
}

double TreeAllReduceTime(int members, double bytes, int channels, double chunk_bytes,
                         const LinkFigures& link, const DpNodes& nodes) {
  return NetTreeTime(NetTreeFigures(NcclProtocol::kSimple), members, bytes, channels, chunk_bytes, link, nodes);
}

namespace {

double TreeTime(const NetProtocol& p, const TreeShape& shape, double bytes, int channels,
                double chunk_bytes, const LinkFigures& link, const DpNodes& nodes) {
  const double edge = TreeEdgeBytes(bytes) / p.share;
  double moving = shape.max_edges * edge / link.bandwidth_bytes_per_s;
  if (shape.max_node_edges > 0) {
    moving = std::max(moving, shape.max_node_edges * edge / nodes.link.bandwidth_bytes_per_s);
  }
  return moving + NetTreeFill(p, shape.depth, TreeChunkBytes(bytes, channels, chunk_bytes), link);
}

// The protocol spec allows for this algorithm (PROTOCOL_AUTO: the fastest, Simple on a tie).
DpChoice BestProtocol(const CollectiveSpec& spec, CollectiveSpec::Algorithm algorithm, OpKind kind,
                      int members, double bytes, const LinkFigures& link, const DpNodes& nodes) {
  // Simple first, so that a tie keeps it (no allocation: the search prices millions).
  NcclProtocol allowed[] = {NcclProtocol::kSimple, NcclProtocol::kLL128, NcclProtocol::kLL};
  int count = 3;
  if (spec.protocol() != CollectiveSpec::PROTOCOL_AUTO) allowed[0] = ProtocolOf(spec.protocol()), count = 1;
  const bool tree = algorithm == CollectiveSpec::TREE;
  const TreeShape shape = tree ? DoubleTreeShape(members, nodes.members_per_node) : TreeShape{};  // O(members): once
  DpChoice best;
  best.algorithm = algorithm;
  best.time_s = -1;
  for (int i = 0; i < count; ++i) {
    const NetProtocol figures = NetFigures(algorithm, allowed[i]);
    const double t = tree ? TreeTime(figures, shape, bytes, spec.channels(),
                                     static_cast<double>(spec.chunk_bytes()), link, nodes)
                          : NetRingTime(figures, kind, members, bytes, link);
    if (best.time_s < 0 || t < best.time_s) best.protocol = figures, best.time_s = t;
  }
  return best;
}

}  // namespace

NetProtocol NetRingFigures(NcclProtocol protocol) {
  const NcclRingFigures& simple = RingFiguresOf(NcclProtocol::kSimple);
  const NcclRingFigures& f = RingFiguresOf(protocol);
  NetProtocol p;
  p.protocol = protocol;
  p.base_s = 1e-6 * std::max(0.0, f.base_us - simple.base_us);
  p.latency_scale = f.net_step_us / simple.net_step_us;
  p.share = f.net_share;
  return p;
}

NetProtocol NetFigures(CollectiveSpec::Algorithm algorithm, NcclProtocol protocol) {
  return algorithm == CollectiveSpec::TREE ? NetTreeFigures(protocol) : NetRingFigures(protocol);
}

CollectiveSpec::Protocol ProtocolSetting(NcclProtocol protocol) {
  switch (protocol) {
    case NcclProtocol::kLL: return CollectiveSpec::LL;
    case NcclProtocol::kLL128: return CollectiveSpec::LL128;
    case NcclProtocol::kSimple: return CollectiveSpec::SIMPLE;
  }
  return CollectiveSpec::SIMPLE;
}

NcclProtocol ProtocolOf(CollectiveSpec::Protocol setting) {
  return setting == CollectiveSpec::LL      ? NcclProtocol::kLL
         : setting == CollectiveSpec::LL128 ? NcclProtocol::kLL128
                                            : NcclProtocol::kSimple;
}

NetProtocol NetTreeFigures(NcclProtocol protocol) {
  NetProtocol p;
  p.protocol = protocol;
  for (const NcclTreeFigures& f : kNcclTree) {
    if (f.protocol != protocol) continue;  // Simple: the fitted form, as the defaults say
    p.base_s = 1e-6 * f.base_us;
    p.latency_scale = f.net_hop_us / RingFiguresOf(NcclProtocol::kSimple).net_step_us;
    p.share = f.share;
  }
  return p;
}

double NetRingTime(const NetProtocol& p, OpKind kind, int members, double bytes,
                   const LinkFigures& link) {
  if (members <= 1) return 0;
  const double hops = std::max(1.0, RingSteps(kind, members) * p.latency_scale);
  return p.base_s + hops * link.latency_s + RingVolume(kind, members, bytes) / (link.bandwidth_bytes_per_s * p.share);
}

double NetTreeFill(const NetProtocol& p, int depth, double chunk, const LinkFigures& link) {
  if (p.protocol == NcclProtocol::kSimple) return TreeFillTime(depth, chunk, link);
  return p.base_s + 2.0 * depth * link.latency_s * p.latency_scale;
}

double NetTreeTime(const NetProtocol& p, int members, double bytes, int channels,
                   double chunk_bytes, const LinkFigures& link, const DpNodes& nodes) {
  if (members <= 1) return 0;
  return TreeTime(p, DoubleTreeShape(members, nodes.members_per_node), bytes, channels, chunk_bytes, link, nodes);
}

DpChoice ChooseCollective(const CollectiveSpec& spec, OpKind kind, int members, double bytes,
                          const LinkFigures& link, const DpNodes& nodes) {
  if (members <= 1) return DpChoice{};  // nothing to exchange
  const DpChoice ring = BestProtocol(spec, CollectiveSpec::RING, kind, members, bytes, link, nodes);
  if (!IsAllReduce(kind) || spec.algorithm() == CollectiveSpec::RING) return ring;  // no tree
  const DpChoice tree = BestProtocol(spec, CollectiveSpec::TREE, kind, members, bytes, link, nodes);
  if (spec.algorithm() == CollectiveSpec::TREE) return tree;
  return tree.time_s < ring.time_s ? tree : ring;
}

}  // namespace megascale
