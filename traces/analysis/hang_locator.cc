#include "traces/analysis/hang_locator.h"

#include <algorithm>
#include <map>
#include <set>
#include <sstream>
#include <tuple>

#include "planner/spec/op_kinds.h"

namespace megascale {

const char* HangCauseName(HangFinding::Cause cause) {
  switch (cause) {
    case HangFinding::Cause::kComputeOrHost: return "compute/host";
    case HangFinding::Cause::kCommunication: return "communication/NIC";
    case HangFinding::Cause::kMismatchedCollective: return "mismatched collective";
  }
  return "?";
}

void HangLocator::OnEvent(const TraceEvent& e, int stage) {
  if (e.rank() < 0) return;
  if (e.rank() >= static_cast<int>(last_.size())) last_.resize(e.rank() + 1);
  LastOp& l = last_[e.rank()];
  if (e.end_ns() >= l.end_ns) l = {e.end_ns(), e.step(), static_cast<int>(e.op_id()), e.kind(), e.lane()};
  // The program is the same every step: the first two steps describe it (a hang in step 0 is
  // described by the ranks that got further).
  if (e.step() > 1) return;
  const uint64_t key = Key(stage, static_cast<int>(e.op_id()));
  if (last_key_ == key) return;
  last_key_ = key;
  program_.try_emplace(key, OpInfo{e.kind(), e.lane(), e.group(), e.phase(), static_cast<int>(e.collective_seq())});
}

void HangLocator::OnStatus(const RankStatus& s) {
  if (s.kind() == RankStatus::HEARTBEAT_LOST) {
    lost_.push_back(s);
    return;
  }
  Wait w{s.rank(), s.step(), static_cast<int>(s.op_id()), s.time_ns(), std::nullopt, s.detail()};
  if (s.has_op_kind()) {
    OpInfo info;
    info.kind = s.op_kind();
    info.group = s.has_group() ? s.group() : NO_GROUP;
    info.seq = s.has_collective_seq() ? static_cast<int>(s.collective_seq()) : -1;
    w.op = info;
  }
  waits_.push_back(std::move(w));
}

std::optional<HangLocator::OpInfo> HangLocator::Resolve(const Wait& w, int stage) const {
  std::optional<OpInfo> info = w.op;
  auto it = program_.find(Key(stage, w.op_id));
  if (it != program_.end()) {
    if (!info) return it->second;
    if (info->group == NO_GROUP) info->group = it->second.group;
    if (info->seq < 0) info->seq = it->second.seq;
    info->phase = it->second.phase;
    return info;
  }
  if (info) return info;
  // The op was never seen completing: its kind is the first word of the simulator's detail.
  OpKind kind;
  const std::string word = w.detail.substr(0, w.detail.find(' '));
  if (!OpKind_Parse(word, &kind)) return std::nullopt;
  OpInfo guess;
  guess.kind = kind;
  guess.group = OpKindOf(kind).group;
  return guess;
}

std::optional<std::pair<int, HangLocator::OpInfo>> HangLocator::NextCommunication(int rank, int hung_step,
                                                                                  int stage) const {
  if (comm_.empty()) {
    // Each stage's communication ops by id, once (a hang at scale asks for thousands of ranks).
    for (const auto& [key, info] : program_) {
      if (info.group == NO_GROUP || info.lane == COMPUTE) continue;
      comm_[static_cast<int>(key >> 32)].emplace_back(static_cast<int>(key & 0xffffffffu), info);
    }
    for (auto& [st, ops] : comm_) {
      std::sort(ops.begin(), ops.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    }
  }
  const int after = rank < static_cast<int>(last_.size()) && last_[rank].step == hung_step ? last_[rank].op_id : -1;
  auto it = comm_.find(stage);
  if (it == comm_.end()) return std::nullopt;
  const auto& ops = it->second;
  auto next = std::upper_bound(ops.begin(), ops.end(), after, [](int id, const auto& op) { return id < op.first; });
  if (next == ops.end()) return std::nullopt;
  return *next;
}

// What Finish works out: the hung collectives' instances, who waits in which, every rank's score.
struct HangLocator::Hung {
  using InstKey = std::tuple<int, int, int, int>;  // (group, step, first member, seq)
  struct Inst {
    std::vector<int> members;
    std::set<int> entered;  // members in it: timed out in it, or there and not timed out yet
    OpKind kind = EMBEDDING;
    Phase phase = FORWARD;
  };
  const std::vector<int>& stage;
  const std::vector<LastOp>& last;
  const RankLayout* layout;
  int ranks = 0;
  std::set<int> lost;                 // ranks whose heartbeat was lost
  std::map<InstKey, Inst> insts;
  std::map<int, InstKey> waiting_in;  // rank -> the instance it timed out in
  std::map<int, double> score;
  std::set<int> mismatched;           // ranks waiting in another collective of the very same group

  int stage_of(int r) const { return r < static_cast<int>(stage.size()) && stage[r] >= 0 ? stage[r] : 0; }
  int64_t last_end(int r) const { return r < static_cast<int>(last.size()) ? last[r].end_ns : INT64_MIN; }
};

std::optional<HangFinding> HangLocator::Finish(int hung_step, const std::vector<int>& stage,
                                               const RankLayout* layout) const {
  Hung h{stage, last_, layout};
  h.ranks = static_cast<int>(std::max(stage.size(), last_.size()));
  for (const RankStatus& s : lost_) h.lost.insert(s.rank());
  CollectInstances(&h);
  AddLateMembers(hung_step, &h);
  Score(&h);
  if (h.score.empty()) return std::nullopt;
  return Explain(hung_step, h);
}

// Instances of hung collectives: (group, step, first member, seq) -> members and who waits in it.
void HangLocator::CollectInstances(Hung* h) const {
  const RankLayout* layout = h->layout;
  const int pp = layout && layout->world_size() > 0 ? layout->CoordsOf(layout->world_size() - 1).pp + 1 : 1;
  for (const Wait& w : waits_) {
    if (!layout || w.rank < 0 || w.rank >= layout->world_size()) continue;
    const std::optional<OpInfo> info = Resolve(w, h->stage_of(w.rank));
    if (!info || info->group == NO_GROUP) continue;
    std::vector<int> members;
    int seq = info->seq;
    if (info->group == TP_GROUP) {
      members = layout->TpGroup(w.rank);
    } else if (info->group == DP_GROUP) {
      members = layout->DpGroup(w.rank);
    } else {
      if (pp <= 1) continue;
      const int s = layout->CoordsOf(w.rank).pp;
      const bool downstream = (info->kind == PP_SEND) == (info->phase != BACKWARD);
      const int peer = layout->PeerOnStage(w.rank, (s + (downstream ? 1 : pp - 1)) % pp);
      members = {std::min(w.rank, peer), std::max(w.rank, peer)};
      seq = -1;  // a send and its receive carry different sequence numbers
    }
    const int first = *std::min_element(members.begin(), members.end());
    const Hung::InstKey key{info->group, w.step, first, seq};
    Hung::Inst& inst = h->insts[key];
    inst.members = members;
    inst.kind = info->kind;
    inst.phase = info->phase;
    inst.entered.insert(w.rank);
    h->waiting_in[w.rank] = key;
  }
}

// A member without a timeout of its own may still be in the collective: NCCL's watchdogs fire one by
// one, and the first tears the job down, so a member that posted it later had not timed out yet. It
// is in it when the op after its last one in its stage's program is this collective (the other side
// of a PP transfer; the same group and sequence number) and it got there no earlier than those that
// timed out (its last op ended after theirs): one that got there first and did not time out first
// never posted it (held up on its host).
void HangLocator::AddLateMembers(int hung_step, Hung* h) const {
  for (auto& [key, inst] : h->insts) {
    int64_t waiters_end = INT64_MAX;
    for (int w : inst.entered) waiters_end = std::min(waiters_end, h->last_end(w));
    for (int m : inst.members) {
      if (inst.entered.count(m) || h->waiting_in.count(m) || h->last_end(m) < waiters_end) continue;
      const std::optional<std::pair<int, OpInfo>> next = NextCommunication(m, hung_step, h->stage_of(m));
      if (!next || next->second.group != std::get<0>(key)) continue;
      const OpInfo& op = next->second;
      const bool same = op.group == PP_GROUP ? op.kind != inst.kind && op.phase == inst.phase
                                             : op.kind == inst.kind && op.seq == std::get<3>(key);
      if (same) inst.entered.insert(m);
    }
  }
}

// Every rank scored by the evidence against it; with no located wait, the first lost heartbeat,
// else the rank that went silent first.
void HangLocator::Score(Hung* h) const {
  for (const auto& [key, inst] : h->insts) {
    const bool all_in = inst.entered.size() == inst.members.size();
    for (int m : inst.members) {
      if (all_in) {
        h->score[m] += 1;  // communication: the rank shared by the most hung transfers
        continue;
      }
      if (inst.entered.count(m)) continue;
      auto other = h->waiting_in.find(m);
      if (other != h->waiting_in.end() && std::get<0>(other->second) == std::get<0>(key) &&
          std::get<2>(other->second) == std::get<2>(key)) {
        h->score[m] += 3;  // waits in another collective of the very same group
        h->mismatched.insert(m);
      } else if (h->lost.count(m)) {
        h->score[m] += 3;
      } else if (other != h->waiting_in.end()) {
        h->score[m] += 1;  // itself held up elsewhere
      } else {
        h->score[m] += 2;  // never entered and waits nowhere: busy or stopped
      }
    }
  }
  if (!h->score.empty()) return;
  if (!lost_.empty()) {
    const RankStatus* first = &lost_[0];
    for (const RankStatus& s : lost_) {
      if (s.last_heartbeat_ns() < first->last_heartbeat_ns()) first = &s;
    }
    h->score[first->rank()] = 1;
  } else if (!waits_.empty() || h->ranks > 0) {
    int silent = 0;
    for (int r = 1; r < h->ranks; ++r) {
      if (h->last_end(r) < h->last_end(silent)) silent = r;
    }
    h->score[silent] = 1;
  }
}

HangFinding HangLocator::Explain(int hung_step, const Hung& h) const {
  std::vector<int> order;
  for (const auto& [r, s] : h.score) order.push_back(r);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
    if (h.score.at(a) != h.score.at(b)) return h.score.at(a) > h.score.at(b);
    if (h.lost.count(a) != h.lost.count(b)) return h.lost.count(a) > h.lost.count(b);
    return h.last_end(a) < h.last_end(b);
  });
  HangFinding f;
  f.rank = order[0];
  f.step = hung_step;
  order.resize(std::min<size_t>(order.size(), 8));
  f.suspects = order;
  std::ostringstream ev;
  // The collective: the hung instance with the culprit in it and the most ranks waiting.
  const Hung::Inst* main = nullptr;
  Hung::InstKey main_key{};
  for (const auto& [key, inst] : h.insts) {
    if (std::find(inst.members.begin(), inst.members.end(), f.rank) == inst.members.end()) continue;
    if (!main || inst.entered.size() > main->entered.size()) {
      main = &inst;
      main_key = key;
    }
  }
  if (main) {
    f.collective = OpKind_Name(main->kind);
    f.group = static_cast<Group>(std::get<0>(main_key));
    f.step = std::get<1>(main_key);
    f.collective_seq = std::get<3>(main_key);
    f.entered = main->entered.count(f.rank) > 0;
    int timed_out = 0;  // of its members, those whose own watchdog fired in it
    for (int m : main->members) timed_out += h.waiting_in.count(m) > 0 && h.waiting_in.at(m) == main_key;
    f.waiting_ranks = timed_out;
    if (f.entered) {
      f.cause = HangFinding::Cause::kCommunication;
      ev << "every member of the " << Group_Name(f.group) << " " << f.collective << " entered it ("
         << timed_out << " timed out waiting, "
         << (timed_out == static_cast<int>(main->members.size()) ? "all" : "the others posted it later")
         << ") and the transfer never completed; rank " << f.rank << " is in the most hung transfers";
    } else {
      f.cause = h.mismatched.count(f.rank) ? HangFinding::Cause::kMismatchedCollective
                                           : HangFinding::Cause::kComputeOrHost;
      ev << f.waiting_ranks << " rank(s) timed out in " << Group_Name(f.group) << " "
         << f.collective << (f.collective_seq >= 0 ? " seq " + std::to_string(f.collective_seq) : "")
         << " of step " << f.step << "; rank " << f.rank << " never entered it";
      if (f.cause == HangFinding::Cause::kMismatchedCollective) {
        const Hung::Inst& other = h.insts.at(h.waiting_in.at(f.rank));
        ev << " (it waits in " << OpKind_Name(other.kind) << " seq "
           << std::get<3>(h.waiting_in.at(f.rank)) << " of the same group)";
      } else if (h.lost.count(f.rank)) {
        ev << " (its heartbeat was lost)";
      }
    }
  } else {
    f.cause = HangFinding::Cause::kComputeOrHost;
    ev << "rank " << f.rank << (h.lost.count(f.rank) ? "'s heartbeat was lost first" : " went silent first");
    // The collective it never entered: the first communication op after its last op.
    if (f.rank < static_cast<int>(last_.size())) {
      const LastOp& l = last_[f.rank];
      const std::optional<std::pair<int, OpInfo>> next = NextCommunication(f.rank, hung_step, h.stage_of(f.rank));
      if (next) {
        f.collective = OpKind_Name(next->second.kind);
        f.group = next->second.group;
        f.collective_seq = next->second.seq;
        ev << "; it never entered " << Group_Name(f.group) << " " << f.collective << " seq "
           << f.collective_seq << " of step " << hung_step;
      }
      if (l.end_ns != INT64_MIN) {
        ev << "; its last op (" << OpKind_Name(l.kind) << ", step " << l.step << ") ended at "
           << static_cast<double>(l.end_ns) / 1e9 << " s";
      }
    }
  }
  f.evidence = ev.str();
  return f;
}

}  // namespace megascale
