// The matmuls of one training step and their floating-point operations: what a benchmark divides
// by a step's time to say how close the step comes to the machine's peak (docs/benchmarks.md,
// "Limits"). Counted from the layers' shapes, 2 FLOPs per multiply-add, for the matmuls a step
// runs and nothing else (activations, norms, the optimizer and rounding passes are not counted):
//
//   linear, tied head   forward x·Wᵀ, input gradient dy·W, weight gradient dyᵀ·x: rows·in·out each
//   conv2d              the same three over im2col: rows·out_c·H'·W'·in_c·k·k each
//   attention           its qkv and proj linears, and per sample and head Q·Kᵀ and P·V forward,
//                       dP = dO·Vᵀ, dV = Pᵀ·dO, dQ = dS·K, dK = dSᵀ·Q backward: rows·T·dim each
//                       (the causal mask is applied after full T×T products, as the backends do)
//
// The input gradient is left out where the Network declares none: the first layer of the chain
// (its input is the data, Network::declare), and the first layer of a residual's branch and
// projection when the residual itself has none. Attention's four backward products always run:
// the gradient of qkv's output is needed for qkv's weights.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "model/model_desc.h"
#include "numeric/compute_format.h"

namespace mantissa {

class Network;

enum class MatmulPass : std::uint8_t { forward, dgrad, wgrad };
const char* matmul_pass_name(MatmulPass pass);  // "forward", "dgrad", "wgrad"

// One matmul of a step (an attention layer's batched products of one pass are one entry each).
struct MatmulFlops {
    std::string layer;            // the layer's name: "fc1", "blocks.0.attn" for attention's products
    MatmulPass pass = MatmulPass::forward;
    double flops = 0;             // for the whole batch: 2 per multiply-add
    ComputeFormat operands;       // what the operands are rounded to: the layer's format for this pass
    bool batched = false;         // attention's per-head products (Backend::batched_matmul)
};

// The matmuls of one training step at `batch` samples (a sequence model: samples of T positions),
// layer by layer from the input, each layer's forward, dgrad, wgrad; in the formats in effect.
std::vector<MatmulFlops> step_matmul_flops(const Network& network, std::int64_t batch);
// The same from a description, without a backend: every format FP32.
std::vector<MatmulFlops> step_matmul_flops(const ModelDesc& desc, std::int64_t batch);

double total_flops(const std::vector<MatmulFlops>& matmuls);

}  // namespace mantissa
