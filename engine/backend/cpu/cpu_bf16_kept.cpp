// CpuBackend: bf16 copies of matmul operands kept in the ledger with their tensors
// (CpuLedger::bf16_copies), for the bf16 matmul path (cpu_bf16_choice.h). A copy is made once per
// write of its tensor and serves every product that reads the same values in the same layout:
// attention's operands (cpu_attention.cpp, bf16_operand), and a linear layer's x and W, which its
// forward copies and its backward reads again (wgrad's x, dgrad's W). Training thread only.
#include <algorithm>
#include <array>
#include <initializer_list>

#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/cpu_bf16_copy.h"
#include "backend/cpu/cpu_tensor_access.h"

namespace mantissa {

CpuBf16Copy& CpuBackend::bf16_copy_slot(const CpuTensor& tensor, const std::array<std::int64_t, 9>& key,
                                        std::int64_t n, bool& current) {
    // A copy made before the tensor's last write is stale. A new copy takes the buffer of a stale
    // one, of this key where there is one, else of another key: so the copies of one tensor read
    // in several views (a transformer's qkv, read as Q, K and V) keep their buffers from step to
    // step. Dropping the stale copies of other keys, as this did, had every step allocate K's and
    // V's copies again and fault in and zero their pages. (The vector may move its entries; their
    // bits stay where they are, so a pointer handed out for the current stamp stays valid.)
    const std::uint64_t stamp = tensor.stamp();
    auto& copies = m_ledger->bf16_copies[&tensor];
    auto it = std::find_if(copies.begin(), copies.end(), [&](const CpuBf16Copy& c) { return c.key == key; });
    current = it != copies.end() && it->stamp == stamp;
    if (current) return *it;
    if (it == copies.end())
        it = std::find_if(copies.begin(), copies.end(), [&](const CpuBf16Copy& c) { return c.stamp != stamp; });
    CpuBf16Copy& copy = it != copies.end() ? *it : copies.emplace_back();
    copy.key = key;
    copy.stamp = stamp;
    ++m_bf16_copies_made;
    if (copy.bits.capacity() < static_cast<std::size_t>(n)) ++m_bf16_copy_allocations;
    copy.bits.resize(static_cast<std::size_t>(n));
    return copy;
}

const std::uint16_t* CpuBackend::kept_bf16_bits(std::initializer_list<const Tensor*> owners, const float* values,
                                                std::int64_t n) {
    if (!m_matmul.bf16_enabled() || !values || n <= 0) return nullptr;
    const CpuTensor* owner = nullptr;
    for (const Tensor* t : owners)
        if (t && cpu(*t).data() == values && t->numel() >= n) owner = &cpu(*t);
    if (!owner) return nullptr;  // a scratch buffer: its values change without a stamp
    // The first n values, in storage order: a key no batched matmul view has (its offset is >= 0).
    const std::array<std::int64_t, 9> key = {-1, n, 0, 0, 0, 0, 0, 0, 0};
    bool current = false;
    CpuBf16Copy& copy = bf16_copy_slot(*owner, key, n, current);
    if (!current) copy.exact = to_bf16_exact_shared(values, copy.bits.data(), n, m_matmul.threads());
    return copy.exact ? copy.bits.data() : nullptr;
}

}  // namespace mantissa
