// The tensor-parallel claim of exec/model/linear.h: a column split and a row split are the same kernel
// run on slices, and the slices reassemble the unsplit layer (forward and backward).
#include <gtest/gtest.h>

#include "exec/model/linear.h"
#include "tests/exec/grad_check.h"

namespace megascale {
namespace exec {
namespace {

using testing::RandomVector;

constexpr int N = 3, C = 8, OC = 6, TP = 2;

// Rows [o0, o0 + n) of a (rows, cols) matrix, or columns [c0, c0 + n), as a new matrix.
std::vector<float> Rows(const std::vector<float>& m, int cols, int o0, int n) {
  return std::vector<float>(m.begin() + o0 * cols, m.begin() + (o0 + n) * cols);
}
std::vector<float> Cols(const std::vector<float>& m, int rows, int cols, int c0, int n) {
  std::vector<float> out;
  for (int r = 0; r < rows; ++r) out.insert(out.end(), m.begin() + r * cols + c0, m.begin() + r * cols + c0 + n);
  return out;
}

// Sums of a different number of terms round differently: a few float ulps of O(1) values.
constexpr float kSumTol = 1e-5f;

TEST(LinearSplit, ColumnSplitIsTheKernelOnRowsOfW) {
  auto x = RandomVector(N * C, 1), w = RandomVector(OC * C, 2), b = RandomVector(OC, 3);
  auto dout = RandomVector(N * OC, 4);
  std::vector<float> out(N * OC), dx(N * C, 0.0f), dw(OC * C, 0.0f), db(OC, 0.0f);
  LinearForward(out.data(), x.data(), w.data(), b.data(), N, C, OC);
  LinearBackward(dx.data(), dw.data(), db.data(), dout.data(), x.data(), w.data(), N, C, OC);

  std::vector<float> dx_sum(N * C, 0.0f);
  const int part = OC / TP;
  for (int r = 0; r < TP; ++r) {
    auto wr = Rows(w, C, r * part, part), br = Rows(b, 1, r * part, part);
    auto dout_r = Cols(dout, N, OC, r * part, part);
    std::vector<float> out_r(N * part), dw_r(wr.size(), 0.0f), db_r(part, 0.0f);
    LinearForward(out_r.data(), x.data(), wr.data(), br.data(), N, C, part);
    // Each rank's output is exactly its slice of features: same arithmetic, same order.
    EXPECT_EQ(out_r, Cols(out, N, OC, r * part, part));
    LinearBackward(dx_sum.data(), dw_r.data(), db_r.data(), dout_r.data(), x.data(), wr.data(), N, C, part);
    EXPECT_EQ(dw_r, Rows(dw, C, r * part, part));
    EXPECT_EQ(db_r, Rows(db, 1, r * part, part));
  }
  // The input gradient is the sum over ranks (the all-reduce of the backward).
  for (int i = 0; i < N * C; ++i) EXPECT_NEAR(dx_sum[i], dx[i], kSumTol);
}

TEST(LinearSplit, RowSplitIsTheKernelOnColumnsOfW) {
  auto x = RandomVector(N * C, 1), w = RandomVector(OC * C, 2), b = RandomVector(OC, 3);
  auto dout = RandomVector(N * OC, 4);
  std::vector<float> out(N * OC), dx(N * C, 0.0f), dw(OC * C, 0.0f), db(OC, 0.0f);
  LinearForward(out.data(), x.data(), w.data(), b.data(), N, C, OC);
  LinearBackward(dx.data(), dw.data(), db.data(), dout.data(), x.data(), w.data(), N, C, OC);

  std::vector<float> out_sum(N * OC, 0.0f), db_sum(OC, 0.0f);
  const int part = C / TP;
  for (int r = 0; r < TP; ++r) {
    auto wr = Cols(w, OC, C, r * part, part), xr = Cols(x, N, C, r * part, part);
    const float* bias = r == 0 ? b.data() : nullptr;  // the bias is added once
    std::vector<float> out_r(N * OC), dx_r(N * part, 0.0f), dw_r(wr.size(), 0.0f), db_r(OC, 0.0f);
    LinearForward(out_r.data(), xr.data(), wr.data(), bias, N, part, OC);
    for (int i = 0; i < N * OC; ++i) out_sum[i] += out_r[i];  // the all-reduce of the forward
    LinearBackward(dx_r.data(), dw_r.data(), r == 0 ? db_r.data() : nullptr, dout.data(), xr.data(),
                   wr.data(), N, part, OC);
    EXPECT_EQ(dx_r, Cols(dx, N, C, r * part, part));
    EXPECT_EQ(dw_r, Cols(dw, OC, C, r * part, part));
    for (int i = 0; i < OC; ++i) db_sum[i] += db_r[i];
  }
  for (int i = 0; i < N * OC; ++i) EXPECT_NEAR(out_sum[i], out[i], kSumTol);
  EXPECT_EQ(db_sum, db);
}

}  // namespace
}  // namespace exec
}  // namespace megascale
