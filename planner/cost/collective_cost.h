// NCCL's collectives as closed forms, in one place. The planner's cost model prices DP ops with
// these functions, and the simulator builds its flows from the same shapes (sim/rendezvous.h), so
// an uncontended simulated collective ends when the closed form says (plan.proto's semantics);
// TP collectives inside a node are priced here too (NcclNodeRingTime; a measured device's with the
// ring).
// `link` is the hop as NCCL sees it (CostModel::Effective: bandwidth x network efficiency, latency
// + per-step latency); `bytes` the full buffer on each member.
//
// Ring (every collective). The members form a ring; each sends RingVolume bytes to its successor,
// (n-1)/n x bytes for reduce-scatter and all-gather and twice that for all-reduce, in RingSteps
// steps (n-1, or 2(n-1)). Time: steps x latency + volume / bandwidth. Channels split the volume
// into parallel flows that share the member's NIC: uncontended, the time does not change.
//
// Double binary tree (all-reduce only, NCCL 2.4+). Two binary trees over the members, as NCCL's
// ncclGetDtree builds them: tree 0 rooted at member 0 (one child, the largest power of two below
// n; below it an in-order binary tree), tree 1 its mirror (r -> n-1-r, n even) or its shift by one
// (r -> r+1, n odd). Each tree carries half the buffer, h = bytes / 2: reduced up to the root and
// broadcast back down, pipelined in chunks so the two phases overlap. Every tree edge carries h
// up (child -> parent) and h down (parent -> child), each split over the channels.
//  * Bandwidth term: the busiest NIC's volume over the bandwidth. A member with c children in a
//    tree sends h to its parent and c x h to its children and receives as much, so its NIC moves
//    h x (its edges in both trees) each way. The trees are near complements (a member inner in one
//    is a leaf in the other), so the busiest NIC moves 4h = 2 x bytes for most n (the ring's
//    2(n-1)/n x bytes tends to the same); DoubleTreeShape counts it exactly. All the flows start
//    together and share each NIC max-min, so the busiest NIC's flows each get bandwidth / (their
//    number) and end together at max_edges x h / bandwidth: no other NIC holds them back, since
//    none carries more flows.
//  * Latency term: the first chunk climbs `depth` hops and comes back down `depth` hops, each
//    costing latency + chunk / bandwidth (the pipeline's fill), with chunk = min(chunk_bytes,
//    h / channels): a channel's share smaller than a chunk goes as one chunk.
//  Time: max_edges x h / bandwidth + 2 x depth x (latency + chunk / bandwidth).
// Both forms price a hop at the one DP hop they are given (CostModel: the slower of the stage
// representative's ring hops). Members that share a node (TP smaller than the node) reach each
// other over NVLink: a ring is still paced by its network hops, while a tree's edges inside a node
// move on NVLink ports, not on the NIC (DpNodes): its bandwidth term is the slower of the two
// links' busiest member, as the simulator's flows share them. (NCCL itself builds its trees
// between nodes, a chain inside each: not modelled; the twin prices the one flat tree both ways.)
// These are Simple's forms; each algorithm also runs LL and LL128 (below: "NCCL's protocols across
// nodes"). AUTO takes, per collective, the lower of the two algorithms at each one's fastest
// protocol (the ring on a tie), as NCCL's tuner does; the tree wins small all-reduces over many
// members (2 log2 n hops against 2(n-1) steps), the ring large ones (its NIC moves 2(n-1)/n x
// bytes, not 2 x bytes, and it has no fill).
// Pure functions; thread-safe.
#pragma once

#include "planner/plan.pb.h"
#include "topology/cluster.pb.h"

namespace megascale {

// A one-way path between two GPUs.
struct LinkFigures {
  double bandwidth_bytes_per_s = 0;
  double latency_s = 0;
};

// --- ring
// Bytes each member sends to its ring successor.
double RingVolume(OpKind kind, int members, double bytes);
// Ring steps: n-1 (reduce-scatter, all-gather) or 2(n-1) (all-reduce).
int RingSteps(OpKind kind, int members);
// steps x latency + volume / bandwidth; 0 for one member.
double RingCollectiveTime(OpKind kind, int members, double bytes, const LinkFigures& link);

// --- double binary tree
// A member's neighbours in one tree; -1 where there is none.
struct TreeNode {
  int parent = -1;
  int children[2] = {-1, -1};
};
// NCCL's ncclGetDtree: member `member`'s neighbours in tree `tree` (0 or 1) of n members. O(log n).
TreeNode DoubleTreeNode(int members, int tree, int member);

struct TreeShape {
  int depth = 0;      // edges on the longest root-to-leaf path (both trees have the same)
  int max_edges = 0;  // the most tree edges at one member that leave its node, both trees counted
  int max_node_edges = 0;  // the most that stay inside its node (NVLink)
};
// Members sharing a node: `members_per_node` consecutive members to a node (member / it), which
// is where a DP group's members sit when TP is smaller than the node (RankLayout's orders).
// O(n).
TreeShape DoubleTreeShape(int members, int members_per_node = 1);
// Where a DP group's members sit: how many share a node (consecutive DP indices), and the hop
// between two of them (the hop NCCL's tree edges inside a node take: NVLink). One member per node
// (TP fills it), or members that do not sit in equal consecutive blocks: every edge is priced at
// the DP hop.
struct DpNodes {
  int members_per_node = 1;
  LinkFigures link;  // inside a node; unused with one member per node
};
// Bytes each direction of a tree edge carries, over all channels: half the buffer.
inline double TreeEdgeBytes(double bytes) { return bytes / 2; }
// The pipeline chunk: min(chunk_bytes, one channel's share of a tree edge).
double TreeChunkBytes(double bytes, int channels, double chunk_bytes);
// The fill: 2 x depth x (latency + chunk / bandwidth).
double TreeFillTime(int depth, double chunk, const LinkFigures& link);
// max_edges x bytes/2 / bandwidth + the fill; 0 for one member.
double TreeAllReduceTime(int members, double bytes, int channels, double chunk_bytes,
                         const LinkFigures& link);
// The same where members share nodes: the bandwidth term is the slower of the busiest NIC's
// (max_edges at the hop's bandwidth) and the busiest NVLink port's (max_node_edges at nodes.link's),
// each its own link, as the simulator routes them; the fill stays at the hop (a path's slowest).
double TreeAllReduceTime(int members, double bytes, int channels, double chunk_bytes,
                         const LinkFigures& link, const DpNodes& nodes);

// --- NCCL's protocols on a ring inside a node (TP collectives)
// NCCL runs a collective with one of three protocols and picks the fastest by its own tuning model
// (src/graph/tuning.cc, NCCL 2.8-2.14): LL (8-byte flag per 8 bytes of data: lowest latency, a
// quarter of the bus bandwidth for all-reduce, a third otherwise), LL128 (128-byte lines: 92 % of
// it) and Simple (all of it, the largest latency). A protocol's time on an NVLink ring is
// base + steps x per-step latency + volume / (bus bandwidth x its share), volume being what each
// member sends (RingVolume). Small messages pay the latencies (an 8-GPU all-reduce at least
// ~10 us, ~35 us with LL128), mid-sized ones the bandwidth shares: the regime large-shape rings
// miss.
enum class NcclProtocol { kLL, kLL128, kSimple };
struct NcclRingCost {
  NcclProtocol protocol = NcclProtocol::kSimple;
  double time_s = 0;
};
// The protocol NCCL would pick, and its time, for `kind` (TP_ALL_REDUCE, TP_ALL_GATHER or
// TP_REDUCE_SCATTER) over `members` GPUs of one node with `bus_bytes_per_s` of NCCL bus bandwidth.
NcclRingCost NcclNodeRingTime(OpKind kind, int members, double bytes, double bus_bytes_per_s);
const char* NcclProtocolName(NcclProtocol p);

// --- NCCL's protocols across nodes (DP collectives)
// NCCL prices each algorithm with each protocol as base + hops x its NET per-hop latency +
// volume / (bus bandwidth x share) (src/graph/tuning.cc) and runs the fastest. Across nodes a
// ring step costs LL 2.7 us, LL128 4.0 us, Simple 9.6 us; a tree hop LL 5.0 us, LL128 8.5 us; LL
// moves a quarter of the bandwidth on a ring (1/3.8 on a tree), LL128 0.7 of it on a ring with one
// member per node (as a DP group is when TP fills the node), 0.915 on a tree (tuning.cc's figure
// at NCCL 2.14; later versions write 120/128). Our Simple forms are
// the fitted ones (RingCollectiveTime, TreeAllReduceTime over CostModel::Effective's hop: the
// route's latency plus network_step_latency_s, no base), so LL and LL128 keep NCCL's proportions
// to them: a ring step or a tree hop costs the hop's latency x NCCL's figure over Simple's ring
// step (ring LL 0.28, LL128 0.42; tree LL 0.52, LL128 0.89; their lines are too small for a chunk
// to fill the pipeline), the base NCCL's excess over Simple's (ring LL128 +1.6 us, tree LL and
// LL128 +4.4 us; the ring's LL base is below Simple's and is taken as equal), the volume moves at
// the share. A 100 kB all-reduce over 64 members then pays LL's latencies, not 126 Simple steps.
// A ring never takes less than one hop's latency (n = 2 with LL: 2 x 0.28 of a step): the
// simulator's flows carry one.
struct NetProtocol {
  NcclProtocol protocol = NcclProtocol::kSimple;
  double base_s = 0;         // on top of Simple's (which has none)
  double latency_scale = 1;  // x the hop's latency per ring step or tree hop
  double share = 1;          // of the hop's bandwidth
};
NetProtocol NetRingFigures(NcclProtocol protocol);
NetProtocol NetTreeFigures(NcclProtocol protocol);
// RING or TREE's figures.
NetProtocol NetFigures(CollectiveSpec::Algorithm algorithm, NcclProtocol protocol);
// The scenario's and the plan's name of a protocol (LL, LL128, SIMPLE), and back.
CollectiveSpec::Protocol ProtocolSetting(NcclProtocol protocol);
NcclProtocol ProtocolOf(CollectiveSpec::Protocol setting);  // REQUIRES: not PROTOCOL_AUTO
// Ring: base + max(1, steps x latency_scale) x latency + volume / (bandwidth x share); 0 for one
// member.
double NetRingTime(const NetProtocol& p, OpKind kind, int members, double bytes,
                   const LinkFigures& link);
// Tree fill: Simple's TreeFillTime; LL, LL128: base + 2 x depth x latency x latency_scale.
double NetTreeFill(const NetProtocol& p, int depth, double chunk, const LinkFigures& link);
// Tree all-reduce: max_edges x bytes/2 / (bandwidth x share) + the fill (members sharing nodes:
// TreeAllReduceTime's bandwidth term at the share); 0 for one member.
double NetTreeTime(const NetProtocol& p, int members, double bytes, int channels,
                   double chunk_bytes, const LinkFigures& link, const DpNodes& nodes = {});

// --- the choice
// What NCCL runs for one DP collective and how long it takes.
struct DpChoice {
  CollectiveSpec::Algorithm algorithm = CollectiveSpec::RING;  // RING or TREE, never AUTO
  NetProtocol protocol;
  double time_s = 0;
};
// The algorithm: RING for reduce-scatter, all-gather and fewer than two members; TREE when asked
// for; AUTO the faster. Each with spec.protocol, or for PROTOCOL_AUTO its fastest protocol. Ties
// keep the ring and Simple. Fewer than two members: a Simple ring of no time.
// `nodes`: where the members sit (a tree's edges inside a node are NVLink's; a ring is paced by
// its network hops whatever it does inside nodes).
DpChoice ChooseCollective(const CollectiveSpec& spec, OpKind kind, int members, double bytes,
                          const LinkFigures& link, const DpNodes& nodes = {});

}  // namespace megascale
