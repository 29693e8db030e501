// Large buffers written once and read often (a dataset's values: 188 MB of FP32 pixels for
// Fashion-MNIST, 737 MB for CIFAR-10; the CPU backend's larger tensors: a GPT's attention scores
// are 8 MB each) ask the kernel for transparent huge pages before their first write. Touched page
// by page, the kernel faults such a buffer in 4 KB at a time (for Fashion-MNIST that was over half
// of a training process's start: 1.02 s, 0.44 s with huge pages); with huge pages it is one fault per 2 MB, and the passes over
// the buffer miss the TLB less. It is advice only: where the kernel gives none (THP set to never,
// another system) nothing changes but the time.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#if defined(__linux__)
#include <sys/mman.h>
#endif

namespace mantissa {

inline constexpr std::size_t huge_page_bytes = std::size_t{2} << 20;

// Advises huge pages for the 2 MB-aligned pages inside [begin, begin + bytes); nothing (not even
// a system call) for a buffer too small to hold one.
inline void advise_huge_pages(void* begin, std::size_t bytes) {
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    if (bytes < huge_page_bytes) return;
    constexpr std::uintptr_t huge = huge_page_bytes;
    const std::uintptr_t start = reinterpret_cast<std::uintptr_t>(begin);
    const std::uintptr_t first = (start + huge - 1) & ~(huge - 1);
    const std::uintptr_t last = (start + bytes) & ~(huge - 1);
    if (last > first) madvise(reinterpret_cast<void*>(first), last - first, MADV_HUGEPAGE);
#else
    (void)begin;
    (void)bytes;
#endif
}

// Reserves room for `n` values in an empty vector and advises huge pages for it, before any is
// written; resize or append afterwards.
template <class T>
void reserve_in_huge_pages(std::vector<T>& v, std::size_t n) {
    v.reserve(n);
    advise_huge_pages(v.data(), v.capacity() * sizeof(T));
}

}  // namespace mantissa
