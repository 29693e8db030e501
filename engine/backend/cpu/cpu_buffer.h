// CpuBuffer: the float arrays of the CPU backend (tensors, scratch, shadows), each placed 16 bytes
// past a 64-byte boundary.
//
// Why: oneDNN's AVX2 matmul reads a non-transposed right operand whose rows are a multiple of
// 4 KiB (1024 floats: the input gradient dX = dy·W of a 1024-wide layer) about 1.9 times faster
// when the operand starts 16 bytes off a 32-byte boundary than when it is 32-byte aligned
// (measured on this project's 2-core AVX2 machine: 256x1024x1024 in 7.2-8.6 ms against 13-18 ms;
// the other operands and shapes do not care, and the products are bit-identical either way).
// std::vector<float> left the placement to malloc, so a run's speed depended on where its weights
// happened to land, between runs and between binaries; a fixed placement makes it the fast case
// every time.
//
// A buffer of 2 MB or more (a GPT's attention scores, a wide layer's weights and optimizer state)
// asks for transparent huge pages before its values are written (huge_pages.h): the first write
// then faults it in 2 MB at a time rather than 4 KB, and the step's passes over it miss the TLB
// less. The placement is unchanged.
#pragma once

#include <cstddef>
#include <cstdint>
#include <new>
#include <vector>

#include "huge_pages.h"

namespace mantissa {

template <typename T>
struct PlacedAllocator {
    using value_type = T;
    static constexpr std::size_t boundary = 64;
    static constexpr std::size_t offset = 16;  // keeps 16-byte (SSE) alignment

    PlacedAllocator() noexcept = default;
    template <typename U>
    PlacedAllocator(const PlacedAllocator<U>&) noexcept {}

    T* allocate(std::size_t n) {
        // The size with the placement's room stays an object size (no wrap past PTRDIFF_MAX).
        if (n > (static_cast<std::size_t>(PTRDIFF_MAX) - boundary) / sizeof(T)) throw std::bad_array_new_length();
        auto* raw = static_cast<unsigned char*>(::operator new(n * sizeof(T) + boundary, std::align_val_t{boundary}));
        advise_huge_pages(raw, n * sizeof(T) + boundary);
        return reinterpret_cast<T*>(raw + offset);
    }
    void deallocate(T* p, std::size_t) noexcept {
        ::operator delete(reinterpret_cast<unsigned char*>(p) - offset, std::align_val_t{boundary});
    }
    template <typename U>
    bool operator==(const PlacedAllocator<U>&) const noexcept {
        return true;
    }
};

using CpuBuffer = std::vector<float, PlacedAllocator<float>>;

}  // namespace mantissa
