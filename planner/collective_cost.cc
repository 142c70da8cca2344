#include "planner/collective_cost.h"

#include <algorithm>
#include <vector>

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

int Edges(const TreeNode& node) {
  return (node.parent >= 0) + (node.children[0] >= 0) + (node.children[1] >= 0);
}

}  // namespace

namespace {
bool IsAllReduce(OpKind kind) { return kind == DP_ALL_REDUCE || kind == TP_ALL_REDUCE; }
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

NcclRingCost NcclNodeRingTime(OpKind kind, int members, double bytes, double bus_bytes_per_s) {
  NcclRingCost best;
  if (members <= 1 || bytes <= 0) return best;
  // NCCL's ring figures over NVLink: base latency and per-step latency (microseconds), and the
  // share of the bus bandwidth each protocol moves data at.
  struct Figures {
    NcclProtocol protocol;
    double base_us, step_us, share;
  };
  const bool all_reduce = IsAllReduce(kind);
  const Figures protocols[] = {{NcclProtocol::kLL, 3.6, 0.47, all_reduce ? 1.0 / 4 : 1.0 / 3},
                               {NcclProtocol::kLL128, 10.0, 1.9, 0.92},
                               {NcclProtocol::kSimple, 8.4, 3.4, 1.0}};
  const double steps = RingSteps(kind, members);
  const double volume = RingVolume(kind, members, bytes);
  best.time_s = -1;
  for (const Figures& f : protocols) {
    const double t = 1e-6 * (f.base_us + steps * f.step_us) + volume / (bus_bytes_per_s * f.share);
    if (best.time_s < 0 || t < best.time_s) best = {f.protocol, t};
  }
  return best;
}

double RingCollectiveTime(OpKind kind, int members, double bytes, const LinkFigures& link) {
  if (members <= 1) return 0;
  return RingSteps(kind, members) * link.latency_s +
         RingVolume(kind, members, bytes) / link.bandwidth_bytes_per_s;
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

TreeShape DoubleTreeShape(int members) {
  TreeShape shape;
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
    shape.max_edges = std::max(shape.max_edges, Edges(DoubleTreeNode(members, 0, r)) +
                                                    Edges(DoubleTreeNode(members, 1, r)));
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
  if (members <= 1) return 0;
  const TreeShape shape = DoubleTreeShape(members);
  return shape.max_edges * TreeEdgeBytes(bytes) / link.bandwidth_bytes_per_s +
         TreeFillTime(shape.depth, TreeChunkBytes(bytes, channels, chunk_bytes), link);
}

namespace {

struct Choice {
  CollectiveSpec::Algorithm algorithm;
  double time_s;
};

Choice Choose(const CollectiveSpec& spec, OpKind kind, int members, double bytes,
              const LinkFigures& link) {
  const bool tree_possible = kind == DP_ALL_REDUCE && members >= 2;
  if (!tree_possible || spec.algorithm() == CollectiveSpec::RING) {
    return {CollectiveSpec::RING, RingCollectiveTime(kind, members, bytes, link)};
  }
  const double tree = TreeAllReduceTime(members, bytes, spec.channels(),
                                        static_cast<double>(spec.chunk_bytes()), link);
  if (spec.algorithm() == CollectiveSpec::TREE) return {CollectiveSpec::TREE, tree};
  const double ring = RingCollectiveTime(kind, members, bytes, link);
  return tree < ring ? Choice{CollectiveSpec::TREE, tree} : Choice{CollectiveSpec::RING, ring};
}

}  // namespace

CollectiveSpec::Algorithm ChooseAlgorithm(const CollectiveSpec& spec, OpKind kind, int members,
                                          double bytes, const LinkFigures& link) {
  return Choose(spec, kind, members, bytes, link).algorithm;
}

double CollectiveTime(const CollectiveSpec& spec, OpKind kind, int members, double bytes,
                      const LinkFigures& link) {
  return Choose(spec, kind, members, bytes, link).time_s;
}

}  // namespace megascale
