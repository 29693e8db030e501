// The training-step kernels of the CUDA backend (block-scaled operands, FP8 scaling: delayed,
// current and rowwise, the fused gradient check, the optimizers, the loss-scale update, the
// operand samples of a pipelined step), in one translation unit; each op in its own .cuh.
#include "backend/cuda/kernels/block_operand.cuh"
#include "backend/cuda/kernels/fp8_current.cuh"
#include "backend/cuda/kernels/fp8_quantize.cuh"
#include "backend/cuda/kernels/fp8_scaling.cuh"
#include "backend/cuda/kernels/loss_scale.cuh"
#include "backend/cuda/kernels/operand_sample.cuh"
#include "backend/cuda/kernels/optimizer.cuh"
#include "backend/cuda/kernels/unscale_check.cuh"
