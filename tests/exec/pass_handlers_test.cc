// The op-kind table and the executor's pass handlers agree: every kind whose row sends it to the
// model has a handler, no other kind has one, and the GEMMs' handlers say their work by rows (so
// that overlap.tp can run them beside their collectives).
#include "exec/parallel/pass_handlers.h"

#include <gtest/gtest.h>

#include "planner/spec/op_kinds.h"

namespace megascale::exec {
namespace {

TEST(PassHandlers, EveryKindTheTableSendsToTheModelHasOneAndNoOtherKindHas) {
  for (const OpKindRow& row : OpKindTable()) {
    const PassHandler* h = PassHandlerOf(row.kind);
    if (row.handler != ExecHandler::kModel) {
      EXPECT_EQ(h, nullptr) << OpKind_Name(row.kind);
      continue;
    }
    ASSERT_NE(h, nullptr) << OpKind_Name(row.kind) << ": the table sends it to the model, which has no handler";
    EXPECT_EQ(h->kind, row.kind);
    EXPECT_NE(h->run == nullptr, h->gemm == nullptr) << OpKind_Name(row.kind) << ": exactly one of run and gemm";
    EXPECT_EQ(h->gemm != nullptr, row.cost == CostClass::kGemm) << OpKind_Name(row.kind);
  }
}

}  // namespace
}  // namespace megascale::exec
