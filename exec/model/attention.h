// Causal multi-head self-attention with an optional sliding window and grouped KV heads (GQA).
//
// Shapes: qkv (B,T,(NH + 2*KVH)*hd) laid out [Q heads | K heads | V heads] along the last dim;
// out (B,T,NH*hd); att (B,NH,T,T) holds the softmax probabilities, saved for the backward
// (0 outside the mask). Query head h reads KV head h / (NH / KVH).
// Mask: query t attends to keys t2 with t - window < t2 <= t; window = 0 means every t2 <= t.
// Scores are scaled by 1/sqrt(hd). Heads are independent, so a TP rank runs this kernel on its
// NH/tp query heads and KVH/tp KV heads. Backward accumulates into dqkv.
#pragma once

namespace megascale {
namespace exec {

struct AttentionShape {
  int B = 0, T = 0;
  int heads = 0, kv_heads = 0, head_dim = 0;
  int window = 0;  // 0 = full causal attention
};

// The first key index query t may read.
int FirstKey(int t, int window);

void AttentionForward(float* out, float* att, const float* qkv, const AttentionShape& s);
void AttentionBackward(float* dqkv, const float* dout, const float* qkv, const float* att,
                       const AttentionShape& s);

}  // namespace exec
}  // namespace megascale
