#include "sim/simulator.h"

#include <algorithm>
#include <memory>
#include <string>

#include <simgrid/s4u/Actor.hpp>
#include <simgrid/s4u/Engine.hpp>

#include "base/signal_cleanup.h"
#include "sim/event_queue.h"
#include "sim/fault_monitor.h"
#include "sim/fault_plan.h"
#include "sim/group_actor.h"
#include "sim/platform.h"
#include "sim/sim_world.h"
#include "sim/stage_info.h"
#include "traces/format/plan_header.h"

namespace megascale {
namespace {

namespace sg4 = simgrid::s4u;

// What the actors index by: a plan the planner built from a resolved scenario holds it (the
// scenario's rules are planner/spec/validate*.cc's); a hand-made one is refused, not run out of bounds.
Status CheckPlan(const Plan& plan, const topology::Cluster& cluster) {
  const LayoutSpec& l = plan.layout();
  const int64_t world = static_cast<int64_t>(l.tp()) * l.pp() * l.dp();
  if (l.tp() <= 0 || l.pp() <= 0 || l.dp() <= 0 || world > cluster.num_gpus() || plan.stages_size() != l.pp() ||
      plan.training().steps() <= 0) {
    return Status::Internal("a hand-made plan: layout " + l.ShortDebugString() + ", " +
                            std::to_string(plan.stages_size()) + " stage programs and " +
                            std::to_string(plan.training().steps()) + " steps on " +
                            std::to_string(cluster.num_gpus()) +
                            " GPUs (a plan needs tp, pp, dp > 0 that fit the cluster, a program per stage and "
                            "steps > 0)");
  }
  return Status::Ok();
}

TraceHeader MakeHeader(const Plan& plan) {
  return PlanTraceHeader(plan, "sim", plan.training().steps(), plan.cluster().gpu());
}

// SimGrid keeps its configuration and models in process-wide state: a second Engine in the same
// process aborts ("Cannot change the model after the initialization"). Refuse instead.
bool engine_used = false;

// Each stage's program and the run's op count (the progress line's denominator).
Status PrepareStages(const Plan& plan, SimWorld& world) {
  int64_t ops_total = 0;
  for (int s = 0; s < plan.layout().pp(); ++s) {
    MS_ASSIGN_OR_RETURN(StageInfo info, PrepareStage(plan, s));
    ops_total += static_cast<int64_t>(info.program->ops_size()) * plan.layout().dp();
    world.stages.push_back(std::move(info));
  }
  world.progress.set_ops_total(ops_total * plan.training().steps());
  return Status::Ok();
}

sg4::Engine* StartEngine() {
  engine_used = true;
  int argc = 2;
  char arg0[] = "megascale-sim";
  char arg1[] = "--log=root.thres:warning";
  char* argv[] = {arg0, arg1, nullptr};
  // Deliberately never destroyed: tearing down 10^5 links costs time and SimGrid cannot be
  // restarted in this process anyway.
  auto* engine = new sg4::Engine(&argc, argv);
  // SimGrid takes SIGINT over (its handler prints every actor's state and exits 1): remove our
  // temporary files, then die of the signal, as every command does (docs/limits.md: 130, 143).
  TakeSignalsBack();
  ConfigureSimGrid();
  return engine;
}

// One actor per (stage, replica) on the first agent hosts, then the fault monitor and one per
// background entry on the hosts after them.
void CreateActors(const Plan& plan, SimWorld& world, int num_actors, int num_background) {
  const int dp = plan.layout().dp();
  for (int s = 0; s < plan.layout().pp(); ++s) {
    for (int d = 0; d < dp; ++d) {
      world.actors.push_back(std::make_unique<GroupActor>(&world, s, d, s * dp + d));
    }
  }
  for (int i = 0; i < num_actors; ++i) {
    GroupActor* actor = world.actors[i].get();
    sg4::Actor::create("stage" + std::to_string(actor->stage()) + "-dp" + std::to_string(actor->replica()),
                       world.platform.agents[i], [actor] { actor->Run(); });
  }
  world.workers_alive = static_cast<int>(world.actors.size());
  if (!world.faults.failed.empty() || !world.faults.link_events.empty()) {
    sg4::Actor::create("fault-monitor", world.platform.agents[num_actors],
                       [&world] { RunFaultMonitor(&world); });
  }
  for (int b = 0; b < num_background; ++b) {
    const int agent = num_actors + 1 + b;
    sg4::Actor::create("background-" + std::to_string(b), world.platform.agents[agent],
                       [&world, b, agent] { RunBackground(&world, b, agent); });
  }
}

// The finished run's figures; the run's end is the last actor's, or the job's end where a failure
// was detected, and never before the last worker left.
SimStats CollectStats(const Plan& plan, const SimWorld& world, int64_t* end_ns_out) {
  SimStats stats;
  stats.actors = static_cast<int>(world.actors.size());
  stats.steps_completed = plan.training().steps();
  int64_t end_ns = 0;
  for (const auto& a : world.actors) {
    stats.steps_completed = std::min(stats.steps_completed, a->steps_completed());
    end_ns = std::max(end_ns, a->max_end_ns());
  }
  stats.failed = world.workers_completed < stats.actors;
  if (world.detected) end_ns = ToNs(world.faults.job_end_s);
  end_ns = std::max(end_ns, ToNs(world.last_worker_exit_s));
  stats.simulated_end_s = end_ns * 1e-9;
  stats.network_activities = world.network_activities;
  stats.trace_events = world.trace_events;
  stats.wall_s = world.progress.ElapsedS();
  stats.actors_unfinished = world.workers_alive;
  stats.background_flows = world.background_flows;
  stats.uplink_flows = world.uplink_flows;
  stats.uplink_shared = world.uplink_shared;
  stats.uplink_over_capacity = world.uplink_over;
  stats.uplink_max_flows = world.uplink_max;
  *end_ns_out = end_ns;
  return stats;
}

}  // namespace

Result<SimStats> Simulate(const Scenario& resolved, const Plan& plan, TraceSink* sink) {
  if (sink == nullptr) return Status::Internal("Simulate: sink is null");
  if (plan.model().has_moe()) {
    return Status::BadField("model.moe", std::to_string(plan.model().moe().num_experts()) + " experts",
                            "the simulator does not carry MoE all-to-alls yet; `megascale plan` prices an MoE "
                            "model (docs/moe.md)");
  }
  if (engine_used) {
    return Status::Internal(
        "Simulate() runs once per process: SimGrid's engine cannot be created twice (docs/simulator.md)");
  }
  MS_ASSIGN_OR_RETURN(topology::Cluster cluster, topology::Cluster::Build(plan.cluster()));
  MS_RETURN_IF_ERROR(CheckPlan(plan, cluster));
  MS_ASSIGN_OR_RETURN(FaultPlan faults, MakeFaultPlan(resolved.faults(), resolved.sim(), cluster));
  const SimSpec& sim = resolved.sim();  // its timeouts hold ResolveSim's rules (REQUIRES)

  SimWorld world(plan, cluster, sim, std::move(faults), sink);
  world.ecmp_flow_id = sim.seed();
  world.one_flow_per_group = sim.flows() == FLOWS_PER_GROUP;
  MS_RETURN_IF_ERROR(PrepareStages(plan, world));

  sg4::Engine* engine = StartEngine();
  const int num_actors = plan.layout().pp() * plan.layout().dp();
  const int num_background = static_cast<int>(world.faults.background.size());
  // Agent hosts: the workers, the monitor, one per background entry.
  world.pools = CorePoolsOf(plan);
  world.platform = BuildPlatform(cluster, num_actors + 1 + num_background,
                                 NetworkCalibrationFor(plan.cluster()), world.pools);
  sink->OnHeader(MakeHeader(plan));
  CreateActors(plan, world, num_actors, num_background);
  engine->run();

  if (!world.error.empty()) return Status::Internal(world.error);
  int64_t end_ns = 0;
  SimStats stats = CollectStats(plan, world, &end_ns);
  world.progress.Summary(stats.simulated_end_s, stats.network_activities, stats.uplink_flows,
                         stats.uplink_shared, stats.uplink_over_capacity, stats.uplink_max_flows);
  RunEnd end;
  end.set_steps_completed(stats.steps_completed);
  end.set_failed(stats.failed);
  end.set_end_ns(end_ns);
  sink->OnEnd(end);
  return stats;
}

}  // namespace megascale
