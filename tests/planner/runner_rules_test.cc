// The rules the runners once enforced on their own, each now caught by validation (ResolveScenario,
// what `megascale validate` runs), naming field, value and rule: the simulator's (sim/simulator.cc's
// timeouts, sim/fault_plan.cc's and sim/fault_links.cc's fault checks, which now only guard a
// hand-made spec) and the executor's (exec/train/trainer.cc's and exec/model/gpt_config.cc's, now
// validation::CheckRunnable, which the executor calls too).
#include <gtest/gtest.h>

#include <string>

#include "planner/spec/scenario_io.h"
#include "planner/spec/validate.h"
#include "planner/spec/validate_run.h"

namespace megascale {
namespace {

// 64 GPUs on a rail-optimized CLOS (8 nodes); GPT-1.3B (32 heads, ffn 8,192, seq 2,048), TP 8 x
// PP 2 x DP 4; `model` and `layout` add fields to those blocks, `extra` adds blocks.
std::string Text(const std::string& extra, const std::string& model = "", const std::string& layout = "") {
  return R"(
    name: "runner-rules"
    cluster { gpu: "A100" num_gpus: 64 fabric: RAIL_CLOS nodes_per_tor: 2 }
    training { global_batch: 16 micro_batch: 1 steps: 1 }
    model { preset: "gpt-1.3b" )" + model + R"( }
    layout { tp: 8 pp: 2 dp: 4 )" + layout + " }\n" + extra;
}

Result<Scenario> Parsed(const std::string& extra, const std::string& model = "", const std::string& layout = "") {
  MS_ASSIGN_OR_RETURN(Scenario s, ParseScenario(Text(extra, model, layout), "test"));
  return ResolveScenario(s);
}

Status Resolve(const std::string& extra, const std::string& model = "", const std::string& layout = "") {
  return Parsed(extra, model, layout).status();
}

void ExpectRefused(const std::string& extra, const std::string& field_value, const std::string& rule,
                   const std::string& model = "", const std::string& layout = "") {
  const Status s = Resolve(extra, model, layout);
  ASSERT_FALSE(s.ok()) << extra;
  EXPECT_EQ(s.code(), Status::Code::kInvalidInput) << s.ToString();
  EXPECT_NE(s.message().find(field_value), std::string::npos) << s.message();
  EXPECT_NE(s.message().find(rule), std::string::npos) << s.message();
}

// sim/fault_plan.cc refused a straggler slower than (0, 1] and a failure before 0 s, and any fault
// rank outside the cluster; sim/fault_links.cc a selector with both or neither of rank and tier, a
// rank past the cluster, a pod a fabric does not have, a switch index past the fabric's.
TEST(RunnerRules, TheSimulatorsFaultChecksAreValidations) {
  ExpectRefused("faults { stragglers { rank: 3 speed: 0 } }", "faults.stragglers[0].speed = 0", "between 0.001 and 1");
  ExpectRefused("faults { stragglers { rank: 3 speed: 1.5 } }", "faults.stragglers[0].speed = 1.5", "between");
  ExpectRefused("faults { stragglers { rank: 64 speed: 0.5 } }", "faults.stragglers[0].rank = 64", "63");
  ExpectRefused("faults { failures { rank: 3 time_s: -1 } }", "faults.failures[0].time_s = -1", "between 0");
  ExpectRefused("faults { failures { rank: -1 time_s: 1 } }", "faults.failures[0].rank = -1", "between 0 and");
  ExpectRefused("faults { nic_flaps { rank: 99 time_s: 1 duration_s: 1 } }", "faults.nic_flaps[0].rank = 99", "63");
  ExpectRefused("faults { degraded_links { links { rank: 3 tier: TIER_NIC_TOR } fraction: 0.5 } }",
                "faults.degraded_links[0].links.rank = 3", "exactly one of rank");
  ExpectRefused("faults { degraded_links { links { } fraction: 0.5 } }", "faults.degraded_links[0].links.rank = -1",
                "exactly one of rank");
  ExpectRefused("faults { background { links { rank: 64 } } }", "faults.background[0].links.rank = 64", "63");
  ExpectRefused("faults { degraded_links { links { tier: TIER_TOR_UP pod: 9 } fraction: 0.5 } }",
                "faults.degraded_links[0].links.pod = 9", "a pod of a RAIL_CLOS fabric");
  ExpectRefused("faults { switch_failures { level: SWITCH_AGG index: 1000 time_s: 1 } }",
                "faults.switch_failures[0].index = 1000", "between 0 and");
}

// sim/simulator.cc refused timeouts of 0 and a heartbeat timeout shorter than its interval.
TEST(RunnerRules, TheSimulatorsTimeoutChecksAreValidations) {
  ExpectRefused("sim { collective_timeout_s: 0 }", "sim.collective_timeout_s = 0", "must be > 0");
  ExpectRefused("sim { heartbeat_interval_s: 0 }", "sim.heartbeat_interval_s = 0", "must be > 0");
  ExpectRefused("sim { heartbeat_interval_s: 10 heartbeat_timeout_s: 5 }", "sim.heartbeat_timeout_s = 5",
                "must be >= sim.heartbeat_interval_s (10)");
}

// exec/train/trainer.cc refused a TP size that does not divide the MLP or, with SP, the micro-batch's
// rows; exec/model/gpt_config.cc a gated MLP. A scenario with a run block is held to them.
TEST(RunnerRules, TheExecutorsChecksAreValidationsForAScenarioWithARunBlock) {
  const std::string run = "run { device: \"cpu\" }";
  ExpectRefused(run, "layout.tp = 8", "must divide model.ffn_hidden (8196)", "ffn_hidden: 8196");
  ExpectRefused(run, "layout.sequence_parallel = true",
                "training.micro_batch x model.seq_len (2047) to be a multiple of layout.tp (8)", "seq_len: 2047",
                "sequence_parallel: true");
  ExpectRefused(run, "model.gated_mlp = true", "GeLU MLP", "gated_mlp: true");
  // Without a run block the same scenarios plan and simulate: the rules are the executor's only.
  EXPECT_TRUE(Resolve("", "ffn_hidden: 8196").ok());
  EXPECT_TRUE(Resolve("", "gated_mlp: true").ok());
}

// What the executor calls on the plan it is given is the same function, with the same message.
TEST(RunnerRules, TheExecutorAndValidateRefuseAlike) {
  Result<Scenario> resolved = Parsed("", "ffn_hidden: 8196");
  ASSERT_TRUE(resolved.ok()) << resolved.status().ToString();
  const Status exec =
      validation::CheckRunnable(resolved->model(), resolved->layout(), resolved->training());
  ASSERT_FALSE(exec.ok());
  const Status validate = Resolve("run { }", "ffn_hidden: 8196");
  EXPECT_EQ(exec.ToString(), validate.ToString());
  // The model rules the executor's GPT checks are the model block's, message for message.
  ModelSpec m = resolved->model();
  m.set_sliding_window(4096);
  const Status model = validation::CheckRunnableModel(m);
  EXPECT_NE(model.message().find("model.sliding_window = 4096: must be between 0 (full attention) and model.seq_len"),
            std::string::npos)
      << model.message();
}

}  // namespace
}  // namespace megascale
