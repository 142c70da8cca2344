#include "exec/cuda/linear_gemm.h"

#include "exec/cuda/cuda_status.h"

namespace megascale {
namespace exec {
namespace cuda {
namespace {

// C (m,n) = alpha op(A) op(B) + beta C, column-major, fp32 in and out, bf16 tensor-core products.
Status Gemm(cublasHandle_t handle, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,
            const float* a, int lda, const float* b, int ldb, float beta, float* c, int ldc) {
  const float alpha = 1.0f;
  return MS_CUBLAS_STATUS(cublasGemmEx(handle, ta, tb, m, n, k, &alpha, a, CUDA_R_32F, lda, b, CUDA_R_32F, ldb,
                                       &beta, c, CUDA_R_32F, ldc, CUBLAS_COMPUTE_32F_FAST_16BF,
                                       CUBLAS_GEMM_DEFAULT));
}

}  // namespace

Status GemmLinearForward(cublasHandle_t handle, float* out, const float* inp, const float* w, int N, int C,
                         int OC) {
  // Column-major: out^T (OC,N) = W (C,OC)^T @ inp^T (C,N).
  return Gemm(handle, CUBLAS_OP_T, CUBLAS_OP_N, OC, N, C, w, C, inp, C, 0.0f, out, OC);
}

Status GemmLinearBackward(cublasHandle_t handle, float* dinp, float* dw, const float* dout, const float* inp,
                          const float* w, int N, int C, int OC) {
  // dinp^T (C,N) += W^T (C,OC) @ dout^T (OC,N).
  if (dinp != nullptr) {
    MS_RETURN_IF_ERROR(Gemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, C, N, OC, w, C, dout, OC, 1.0f, dinp, C));
  }
  // dW^T (C,OC) += inp^T (C,N) @ dout (N,OC).
  if (dw == nullptr) return Status::Ok();
  return Gemm(handle, CUBLAS_OP_N, CUBLAS_OP_T, C, OC, N, inp, C, dout, OC, 1.0f, dw, C);
}

}  // namespace cuda
}  // namespace exec
}  // namespace megascale
