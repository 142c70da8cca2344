#include "exec/pipeline_schedule.h"

#include "planner/schedule.h"
#include "planner/stage_program.h"

namespace megascale {
namespace exec {

Result<double> RunPipelineSchedule(StageModel* model, ParallelGroups* groups, const TpContext& ctx,
                                   const std::vector<MicroBatchData>& data, const ScheduleSetup& setup) {
  Communicator* pp = groups->pp.get();
  OpRecorder* rec = ctx.recorder;
  const int stages = pp->size(), V = model->virtual_stages();
  const int vp = V / stages;
  const size_t n = static_cast<size_t>(model->dims().rows) * model->dims().C;
  const double bytes = 4.0 * n;
  DeviceBuffer inbox(ctx.device, n);
  double loss_sum = 0.0;

  const std::vector<ScheduleUnit> units = StageSchedule(pp->rank(), stages, vp, setup.microbatches);
  std::vector<size_t> last_backward(vp, 0);  // of each chunk, an index into units
  for (size_t i = 0; i < units.size(); ++i) {
    if (!units[i].forward) last_backward[units[i].chunk] = i;
  }
  for (size_t i = 0; i < units.size(); ++i) {
    const ScheduleUnit& u = units[i];
    const int v = model->virtual_stage(u.chunk), mb = u.microbatch;
    rec->SetUnit(u.forward ? FORWARD : BACKWARD, mb, u.chunk);
    if (u.forward) {
      if (!model->is_first(u.chunk)) {
        MS_RETURN_IF_ERROR(rec->Comm(PP_RECV, bytes, [&] {
          return pp->Recv(inbox.data(), n, (v - 1) % stages, PpTag(mb, v - 1, true, V));
        }));
      }
      float loss = 0.0f;
      MS_RETURN_IF_ERROR(model->Forward(ctx, u.chunk, mb, data[mb], inbox.data(), &loss));
      MS_RETURN_IF_ERROR(rec->failure());  // a failed device: stop before its output travels
      if (model->is_last(u.chunk)) {
        if (setup.counts_loss) loss_sum += static_cast<double>(loss) * setup.loss_scale;
      } else {
        rec->SetUnit(FORWARD, mb, u.chunk);
        MS_RETURN_IF_ERROR(rec->Comm(PP_SEND, bytes, [&] {
          return pp->Send(model->Output(u.chunk, mb), n, (v + 1) % stages, PpTag(mb, v, true, V));
        }));
      }
    } else {
      if (!model->is_last(u.chunk)) {
        MS_RETURN_IF_ERROR(rec->Comm(PP_RECV, bytes, [&] {
          return pp->Recv(inbox.data(), n, (v + 1) % stages, PpTag(mb, v + 1, false, V));
        }));
      }
      MS_RETURN_IF_ERROR(model->Backward(ctx, u.chunk, mb, data[mb], inbox.data(), setup.loss_scale));
      MS_RETURN_IF_ERROR(rec->failure());
      if (!model->is_first(u.chunk)) {
        rec->SetUnit(BACKWARD, mb, u.chunk);
        MS_RETURN_IF_ERROR(rec->Comm(PP_SEND, bytes, [&] {
          return pp->Send(model->InputGrad(u.chunk, mb), n, (v - 1) % stages, PpTag(mb, v, false, V));
        }));
      }
      model->Release(u.chunk, mb);
      if (setup.chunk_grads_done && last_backward[u.chunk] == i) {
        MS_RETURN_IF_ERROR(setup.chunk_grads_done(u.chunk));
      }
    }
  }
  MS_RETURN_IF_ERROR(pp->WaitSends());
  return loss_sum;
}

}  // namespace exec
}  // namespace megascale
