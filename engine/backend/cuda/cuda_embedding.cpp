// CudaBackend: the embedding lookup and its backward, on the kernels of kernels/embedding.cuh.
// The ids are a host array (the batch's tokens): each call uploads them (or, for the backward,
// the rows per id built from them) into a device buffer the backend keeps and grows (a scratch
// slot). The copies come from pageable host memory, which cudaMemcpyAsync stages before it returns,
// so the caller may reuse its array at once and nothing waits for the kernels.
// The backward is deterministic and bit-identical to the CPU: the host sorts the rows by id
// (stable, as the CPU does) into segments, and each (segment, column) is summed by one thread
// in ascending row order from +0 in FP32. Training thread only. The reference: cpu/cpu_embedding.cpp.
#include <algorithm>
#include <numeric>

#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/cuda_check.h"
#include "backend/cuda/cuda_tensor_access.h"

namespace mantissa::cuda {

void CudaBackend::embedding_forward_impl(const Tensor& weight, const std::int32_t* ids, Tensor& y,
                                         std::int64_t rows) {
    activate();
    require_plain(weight, "embedding_forward");
    written(y);
    if (rows == 0 || weight.cols() == 0) return;
    const std::size_t bytes = static_cast<std::size_t>(rows) * sizeof(std::int32_t);
    auto* dev_ids = static_cast<std::int32_t*>(scratch(slot_ids, bytes));
    MANTISSA_CUDA_CHECK(cudaMemcpyAsync(dev_ids, ids, bytes, cudaMemcpyHostToDevice, m_stream));
    launch_embedding_forward(cuda(weight).data(), code(weight.format()), weight.cols(), dev_ids, rows, cuda(y).data(),
                             code(y.format()), m_stream);
}

void CudaBackend::embedding_backward_impl(const std::int32_t* ids, const Tensor& dy, Tensor& grad_weight,
                                          std::int64_t rows, bool accumulate) {
    activate();
    require_plain(dy, "embedding_backward");
    CudaTensor& gw = cuda(grad_weight);
    const std::int64_t dim = grad_weight.cols();
    if (accumulate) {
        fold_multiplier(gw);  // the rows no id names keep their values
    } else {
        written(gw);  // +0 is all-zero bits in every format
        MANTISSA_CUDA_CHECK(cudaMemsetAsync(
            gw.data(), 0,
            static_cast<std::size_t>(gw.numel()) * static_cast<std::size_t>(format_bytes(gw.format())), m_stream));
    }
    if (rows == 0 || dim == 0) return;

    // The rows sorted by id (stable: ascending rows within an id), cut into one segment per id:
    // m_embedding_rows = [segment starts (S + 1)] [segment ids (S)] [rows in order (R)].
    m_embedding_order.resize(static_cast<std::size_t>(rows));
    std::iota(m_embedding_order.begin(), m_embedding_order.end(), std::int64_t{0});
    std::stable_sort(m_embedding_order.begin(), m_embedding_order.end(),
                     [ids](std::int64_t a, std::int64_t b) { return ids[a] < ids[b]; });
    std::vector<std::int64_t> starts, segment_ids;
    for (std::int64_t i = 0; i < rows; ++i)
        if (i == 0 || ids[m_embedding_order[static_cast<std::size_t>(i)]] !=
                          ids[m_embedding_order[static_cast<std::size_t>(i - 1)]]) {
            starts.push_back(i);
            segment_ids.push_back(ids[m_embedding_order[static_cast<std::size_t>(i)]]);
        }
    const auto segments = static_cast<std::int64_t>(segment_ids.size());
    starts.push_back(rows);
    m_embedding_rows.clear();
    m_embedding_rows.insert(m_embedding_rows.end(), starts.begin(), starts.end());
    m_embedding_rows.insert(m_embedding_rows.end(), segment_ids.begin(), segment_ids.end());
    m_embedding_rows.insert(m_embedding_rows.end(), m_embedding_order.begin(), m_embedding_order.end());

    const std::size_t bytes = m_embedding_rows.size() * sizeof(std::int64_t);
    auto* dev = static_cast<std::int64_t*>(scratch(slot_embedding_rows, bytes));
    MANTISSA_CUDA_CHECK(cudaMemcpyAsync(dev, m_embedding_rows.data(), bytes, cudaMemcpyHostToDevice, m_stream));
    launch_embedding_backward(dev, segments, cuda(dy).data(), code(dy.format()), dim, gw.data(), code(gw.format()),
                              accumulate, m_stream);
}

}  // namespace mantissa::cuda
