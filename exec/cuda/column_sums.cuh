// Sums over the rows of an (N, C) row-major array, per column, for the parameter gradients that
// add every row (bias, LayerNorm's dw and db). One thread per column looping over all N rows keeps
// only C threads busy (16 of 132 SMs for C = 2048) and waits on each load in turn: ~1 ms for 4,096
// rows. Here a block takes 32 columns x a chunk of rows (8 threads down the rows, coalesced across
// the columns), writes one partial sum per (chunk, column) into scratch, and a second kernel adds
// each column's chunks in chunk order into the output (+=, the gradients' contract). No atomics:
// the result is deterministic, though added in another order than the CPU's row loop.
// Device code and launchers; include from one .cu per use.
#pragma once

#include <cuda_runtime.h>

#include "exec/cuda/reduce.cuh"

namespace megascale {
namespace exec {
namespace cuda {

constexpr int kColumnRows = 8;        // threads down the rows of a block
constexpr int kRowsPerChunk = 64;     // rows one block adds
constexpr int kMaxColumnChunks = 512;

inline int ColumnChunks(int N) {
  const int chunks = (N + kRowsPerChunk - 1) / kRowsPerChunk;
  return chunks < kMaxColumnChunks ? chunks : kMaxColumnChunks;
}

// value(n, c, acc) adds row n's terms of column c into acc[0..K).
template <int K, typename Value>
__global__ void ColumnPartialsKernel(float* partials, int N, int C, int rows_per_chunk, Value value) {
  __shared__ float part[K][kColumnRows][kWarp + 1];
  const int col = blockIdx.x * kWarp + threadIdx.x;
  const int r0 = blockIdx.y * rows_per_chunk, r1 = min(N, r0 + rows_per_chunk);
  float acc[K];
  for (int k = 0; k < K; ++k) acc[k] = 0.0f;
  if (col < C) {
    for (int n = r0 + threadIdx.y; n < r1; n += kColumnRows) value(n, col, acc);
  }
  for (int k = 0; k < K; ++k) part[k][threadIdx.y][threadIdx.x] = acc[k];
  __syncthreads();
  if (threadIdx.y != 0 || col >= C) return;
  for (int k = 0; k < K; ++k) {
    float s = 0.0f;
    for (int y = 0; y < kColumnRows; ++y) s += part[k][y][threadIdx.x];
    partials[(static_cast<size_t>(k) * gridDim.y + blockIdx.y) * C + col] = s;
  }
}

// out_k[c] += the chunks' partial sums of column c, in chunk order (out1 unused when K == 1).
template <int K>
__global__ void ColumnFinishKernel(float* out0, float* out1, const float* partials, int chunks, int C) {
  const int col = blockIdx.x * blockDim.x + threadIdx.x;
  if (col >= C) return;
  for (int k = 0; k < K; ++k) {
    float s = 0.0f;
    for (int j = 0; j < chunks; ++j) s += partials[(static_cast<size_t>(k) * chunks + j) * C + col];
    (k == 0 ? out0 : out1)[col] += s;
  }
}

// partials: ColumnSumsScratch(N, C, K) floats (kernels.h).
template <int K, typename Value>
void LaunchColumnSums(float* out0, float* out1, float* partials, int N, int C, Value value, cudaStream_t stream) {
  const int chunks = ColumnChunks(N), rows_per_chunk = (N + chunks - 1) / chunks;
  const dim3 grid((C + kWarp - 1) / kWarp, chunks), block(kWarp, kColumnRows);
  ColumnPartialsKernel<K><<<grid, block, 0, stream>>>(partials, N, C, rows_per_chunk, value);
  constexpr int kThreads = 256;
  ColumnFinishKernel<K><<<(C + kThreads - 1) / kThreads, kThreads, 0, stream>>>(out0, out1, partials, chunks, C);
}

}  // namespace cuda
}  // namespace exec
}  // namespace megascale
