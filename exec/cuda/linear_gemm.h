// The GEMMs of the linear layer (exec/model/linear.h: out = inp @ W^T, W stored (OC, C) row-major) on
// cuBLAS: fp32 storage, bf16 tensor-core products with fp32 accumulation
// (CUBLAS_COMPUTE_32F_FAST_16BF): mixed precision whose master weights and gradients stay fp32.
// cuBLAS is column-major, so a row-major (R, K) matrix is read as its (K, R) transpose.
// Bias terms are not here (CudaDevice adds them with the bias kernels). Enqueued on the handle's
// stream; failure: Internal naming the call and file:line. Thread-safety: that of the handle.
#pragma once

#include <cublas_v2.h>

#include "base/status.h"

namespace megascale {
namespace exec {
namespace cuda {

// out (N,OC) = inp (N,C) @ W^T.
Status GemmLinearForward(cublasHandle_t handle, float* out, const float* inp, const float* w, int N, int C, int OC);
// dinp (N,C) += dout (N,OC) @ W;  dW (OC,C) += dout^T @ inp.
Status GemmLinearBackward(cublasHandle_t handle, float* dinp, float* dw, const float* dout, const float* inp,
                          const float* w, int N, int C, int OC);

}  // namespace cuda
}  // namespace exec
}  // namespace megascale
