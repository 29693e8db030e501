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
//
// A tensor's values (ZeroedCpuBuffer) start as zeros that nobody writes: a large one's storage is
// mapped from the kernel, whose fresh pages are zero, a small one's comes from calloc, so building
// a model's tensors writes nothing and faults nothing in. Writing n zeros there (std::vector's fill)
// took most of a Session's construction, on the thread that builds it, which for the GUI is its
// own (a GPT's: 0.9 s, now 0.1 s; docs/benchmarks.md, 2026-12-07, "tensors' zeros left to the
// kernel"); now each page is faulted in, zeroed by the kernel, where a step first writes it, on
// the training thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <new>
#include <utility>
#include <vector>

#include "huge_pages.h"

#if defined(__linux__)
#include <sys/mman.h>
#endif

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

// PlacedAllocator's placement, over zeroed storage whose elements are value-initialised by not
// writing them (T() is all zero bits for the arithmetic types it holds). So a vector of n
// value-initialised elements is n zeros without a write; its elements must not be shrunk away and
// grown back (resize(k < n) then resize(n) would find the old values, not zeros): a tensor's size is
// fixed when it is made.
template <typename T>
struct ZeroedPlacedAllocator {
    using value_type = T;
    static constexpr std::size_t boundary = PlacedAllocator<T>::boundary;
    static constexpr std::size_t offset = PlacedAllocator<T>::offset;

    ZeroedPlacedAllocator() noexcept = default;
    template <typename U>
    ZeroedPlacedAllocator(const ZeroedPlacedAllocator<U>&) noexcept {}

    T* allocate(std::size_t n) {
        if (n > (static_cast<std::size_t>(PTRDIFF_MAX) - 2 * boundary) / sizeof(T)) throw std::bad_array_new_length();
#if defined(__linux__)
        if (mapped(n)) {
            const std::size_t bytes = n * sizeof(T) + offset;
            void* base = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
            if (base == MAP_FAILED) throw std::bad_alloc();
            advise_huge_pages(base, bytes);
            return reinterpret_cast<T*>(static_cast<unsigned char*>(base) + offset);  // a page is on a boundary
        }
#endif
        const std::size_t bytes = n * sizeof(T) + 2 * boundary;
        auto* raw = static_cast<unsigned char*>(std::calloc(1, bytes));
        if (!raw) throw std::bad_alloc();
        // The first 64-byte boundary at least 8 bytes in, then the offset; calloc's own pointer
        // is kept just before the values, to free.
        const auto at = (reinterpret_cast<std::uintptr_t>(raw) + sizeof(void*) + boundary - 1) & ~(boundary - 1);
        auto* values = reinterpret_cast<unsigned char*>(at) + offset;
        reinterpret_cast<void**>(values)[-1] = raw;
        return reinterpret_cast<T*>(values);
    }
    void deallocate(T* p, std::size_t n) noexcept {
#if defined(__linux__)
        if (mapped(n)) {
            munmap(reinterpret_cast<unsigned char*>(p) - offset, n * sizeof(T) + offset);
            return;
        }
#endif
        std::free(reinterpret_cast<void**>(p)[-1]);
    }
    // Value-initialisation leaves the storage's zeros as they are; any other construction writes.
    template <typename U>
    void construct(U*) noexcept {}
    template <typename U, typename... Args>
    void construct(U* p, Args&&... args) {
        ::new (static_cast<void*>(p)) U(std::forward<Args>(args)...);
    }
    template <typename U>
    bool operator==(const ZeroedPlacedAllocator<U>&) const noexcept {
        return true;
    }

private:
    // A block of 1 MiB or more is mapped on its own, so its pages are always the kernel's fresh
    // zeros: calloc's large blocks come from the heap once a few have been freed (glibc raises its
    // mapping threshold, up to 32 MiB, as they are), and there it writes the zeros itself.
    static bool mapped(std::size_t n) { return n * sizeof(T) >= (std::size_t{1} << 20); }
};

using ZeroedCpuBuffer = std::vector<float, ZeroedPlacedAllocator<float>>;

}  // namespace mantissa
