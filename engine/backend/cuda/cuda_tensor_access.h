// The CUDA backend's view of the engine's tensors, for the cuda_*.cpp sources: every Tensor a
// CudaBackend is handed was made by its allocate(), so they reach the device storage through a
// static cast, and give the kernels a tensor's format as its integer code (kernels/convert.cuh's
// FormatCode equals mantissa::Format's values; cuda_ops.cpp asserts it).
#pragma once

#include "backend/cuda/cuda_backend.h"

namespace mantissa::cuda {

inline CudaTensor& cuda(Tensor& t) {
    return static_cast<CudaTensor&>(t);
}
inline const CudaTensor& cuda(const Tensor& t) {
    return static_cast<const CudaTensor&>(t);
}
inline int code(Format f) {
    return static_cast<int>(f);
}

}  // namespace mantissa::cuda
