// The 3D-parallel view of one rank (MegaScale section 5, "3D parallel training visualization"):
// the members of its TP, DP and PP groups with their compute per step, from a finished report.
// Pure functions over the report; thread-safe.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "planner/spec/layout.h"
#include "traces/analysis/diagnosis.h"

namespace megascale {

// The layout the report's heat map carries; none when the trace has no tp, pp, dp.
std::optional<RankLayout> HeatMapLayout(const HeatMap& map);

// The rank a reader most likely wants to see: the top straggler, else the hang culprit, else the
// failed rank; -1 when the run shows none of them. `why` receives the reason.
int DefaultViewRank(const DiagnosisReport& report, std::string* why);

// The view of `rank`. InvalidInput when the trace carries no layout (tp, pp, dp) or the rank is
// outside it (naming `field`, the option that asked for it).
Result<RankView> MakeRankView(const DiagnosisReport& report, int rank, const std::string& why,
                              const std::string& field);

// A few lines of text: one per group, members as "rank(+slowdown%)", the viewed rank bracketed.
std::string RankViewToText(const RankView& view);
// What a reader can take in of the DP group (192 members at scale): the rank and the slowest others.
std::vector<GroupMember> DpGroupShown(const RankView& view);

}  // namespace megascale
