// The transformer ops' kernels of the CUDA backend (the batched matmul's packing, epilogue and
// fallback, the softmax, the layer norm, the embedding), in one translation unit; each in its own .cuh.
#include "backend/cuda/kernels/batched_matmul.cuh"
#include "backend/cuda/kernels/embedding.cuh"
#include "backend/cuda/kernels/layernorm.cuh"
#include "backend/cuda/kernels/softmax.cuh"
