// Hang localization: for a step that never completed, which rank held it up, in which collective
// (group and collective_seq), and whether it looks like compute/host, communication/NIC or a
// mismatched collective.
//
// Evidence, streamed: each rank's last op; the ops of each stage's program as seen in events (op_id
// -> kind, group, collective_seq; O(stages x ops per program)); the OP_TIMEOUT/OP_FAILED statuses
// (the op a rank waited in) and the lost heartbeats. Memory O(ranks + program), never O(events).
//
// The rule (Finish):
//  * Timeouts name the collectives ranks waited in. Each is an instance of a group (TP group,
//    DP group, or the PP pair) at (step, collective_seq); its members come from RankLayout. A
//    member that did not time out in it never entered it: if it waits in another collective of the
//    same kind of group, the collective is mismatched; otherwise it is held up in compute or on its
//    host. A member that did not time out but whose next op in its program is this collective
//    entered it too (it posted it later; the first watchdog to fire tore the job down). If every
//    member entered, the transfer never completed: communication/NIC, and the culprit is the rank
//    shared by the most hung instances (on a tie, the one whose last op ended first).
//  * Without timeouts (the job was stopped by the heartbeat monitor first), the rank whose
//    heartbeat was lost first, else the rank that went silent first, is the culprit; the
//    collective it never entered is the first communication op after its last one in its stage's
//    program.
// Not thread-safe.
#pragma once

#include <map>
#include <optional>
#include <unordered_map>
#include <vector>

#include "planner/spec/layout.h"
#include "traces/analysis/diagnosis_findings.h"

namespace megascale {

class HangLocator {
 public:
  void OnEvent(const TraceEvent& e, int stage);
  void OnStatus(const RankStatus& s);

  // `hung_step`: the first step that did not complete. `stage[r]`: rank r's stage. `layout` may be
  // null (then groups are unknown and only the silent-rank rule applies).
  std::optional<HangFinding> Finish(int hung_step, const std::vector<int>& stage,
                                    const RankLayout* layout) const;

 private:
  struct OpInfo {
    OpKind kind = EMBEDDING;
    Lane lane = COMPUTE;
    Group group = NO_GROUP;
    Phase phase = FORWARD;
    int seq = -1;
  };
  struct LastOp {
    int64_t end_ns = INT64_MIN;
    int step = -1;
    int op_id = -1;
    OpKind kind = EMBEDDING;
    Lane lane = COMPUTE;
  };
  struct Wait {  // an OP_TIMEOUT / OP_FAILED status
    int rank;
    int step;
    int op_id;
    int64_t time_ns;
    std::optional<OpInfo> op;  // from the status itself, when it says
    std::string detail;
  };
  static uint64_t Key(int stage, int op_id) {
    return (static_cast<uint64_t>(static_cast<uint32_t>(stage)) << 32) | static_cast<uint32_t>(op_id);
  }
  std::optional<OpInfo> Resolve(const Wait& w, int stage) const;
  struct Hung;  // what Finish works out (hang_locator.cc)
  // Finish's steps, in order.
  void CollectInstances(Hung* h) const;
  void AddLateMembers(int hung_step, Hung* h) const;
  void Score(Hung* h) const;
  HangFinding Explain(int hung_step, const Hung& h) const;
  // The first communication op (its id and what it is) after `rank`'s last op in its stage's
  // program: the one it waits in, or would wait in next.
  std::optional<std::pair<int, OpInfo>> NextCommunication(int rank, int hung_step, int stage) const;

  std::unordered_map<uint64_t, OpInfo> program_;   // (stage, op_id) -> op
  // The key last put into program_: a TP group's ranks give their ops one after the other, so
  // most events repeat it and skip the lookup.
  std::optional<uint64_t> last_key_;
  // Built from program_ at the first NextCommunication: stage -> its communication ops by id.
  mutable std::map<int, std::vector<std::pair<int, OpInfo>>> comm_;
  std::vector<LastOp> last_;                       // by rank
  std::vector<Wait> waits_;
  std::vector<RankStatus> lost_;                   // HEARTBEAT_LOST
};

}  // namespace megascale
