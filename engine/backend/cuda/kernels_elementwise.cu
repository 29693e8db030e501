// The elementwise and loss kernels of the CUDA backend, in one translation unit (each op in its
// own .cuh under kernels/): fewer, larger units compile faster for six GPU targets than one per op.
#include "backend/cuda/kernels/activation.cuh"
#include "backend/cuda/kernels/cast.cuh"
#include "backend/cuda/kernels/linear_epilogue.cuh"
#include "backend/cuda/kernels/mse.cuh"
#include "backend/cuda/kernels/softmax_xent.cuh"
