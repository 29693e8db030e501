// The convolutional ops' kernels of the CUDA backend (the convolution's data movement and
// epilogues, the pools, batch norm, add), in one translation unit; each in its own .cuh.
#include "backend/cuda/kernels/batchnorm.cuh"
#include "backend/cuda/kernels/conv.cuh"
#include "backend/cuda/kernels/pool.cuh"
