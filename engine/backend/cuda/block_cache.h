// BlockCache: the bookkeeping of the CUDA backend's caching allocator, with no CUDA in it: the
// module gives it cudaMalloc/cudaFree as the raw allocator, the tests give it malloc/free.
//
// Why caching: cudaMalloc and cudaFree synchronise the device and cost tens of microseconds to
// milliseconds; a training step that re-declares a tensor (a live precision change) or grows a
// scratch buffer must not pay that, and a captured CUDA graph needs stable addresses. A released
// block goes to a free list and is handed out again to a request of about its size.
//
// Invariants:
// - Sizes handed to the raw allocator are rounded (rounded_size): 512-byte steps below 1 MiB,
//   2 MiB steps above, so requests of nearby sizes share blocks.
// - A cached block serves a request when its size is at least the rounded request and at most a
//   quarter larger (best fit), so a small tensor never pins a huge block.
// - Accounting per MemoryCategory counts the bytes asked for (numel x bytes of the declared
//   format), as every backend reports them; reserved() counts what the raw allocator holds
//   (blocks in use, rounded, plus the cache).
// - When the raw allocator fails, the cache is returned to it and the request retried once; a
//   second failure throws mantissa::Error naming the request and the memory by category.
// - All blocks are stream-ordered on the backend's one stream: a released block may be reused by
//   later work on that stream at once.
// Owned and used by the training thread only.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <unordered_map>

#include "backend/backend.h"

namespace mantissa::cuda {

class BlockCache {
public:
    using RawAlloc = std::function<void*(std::size_t bytes)>;  // null when out of memory
    using RawFree = std::function<void(void* ptr)>;

    struct Block {
        void* ptr = nullptr;
        std::size_t size = 0;       // bytes held (rounded)
        std::size_t requested = 0;  // bytes asked for
        MemoryCategory category = MemoryCategory::workspace;
    };

    BlockCache(RawAlloc raw_alloc, RawFree raw_free);
    ~BlockCache();  // returns every block, cached or still in use, to the raw allocator
    BlockCache(const BlockCache&) = delete;
    BlockCache& operator=(const BlockCache&) = delete;

    // A block of at least `bytes` (a zero-byte request still gets a distinct block). `what`
    // names the tensor for the out-of-memory message.
    Block allocate(std::size_t bytes, MemoryCategory category, const std::string& what);
    // Back to the cache. A pointer this cache did not hand out is ignored (and counted).
    void release(void* ptr) noexcept;
    // Returns every cached block to the raw allocator; the bytes freed.
    std::size_t trim() noexcept;

    std::int64_t in_use(MemoryCategory c) const { return m_in_use[static_cast<std::size_t>(c)]; }
    std::int64_t in_use_total() const;
    std::int64_t peak_in_use() const { return m_peak_in_use; }
    std::int64_t reserved() const { return m_reserved; }  // raw allocator's bytes
    std::int64_t peak_reserved() const { return m_peak_reserved; }
    std::int64_t cached() const { return m_cached; }  // of reserved, in the free lists
    std::int64_t live_blocks() const { return static_cast<std::int64_t>(m_live.size()); }
    std::int64_t raw_allocations() const { return m_raw_allocations; }  // calls that succeeded
    std::int64_t cache_hits() const { return m_cache_hits; }
    std::int64_t unknown_releases() const { return m_unknown_releases; }
    void reset_peaks();

    static std::size_t rounded_size(std::size_t bytes);
    // "parameters 1.5 MiB, gradients 3 MiB, ..." for messages.
    std::string describe() const;

private:
    void* raw(std::size_t size);

    RawAlloc m_raw_alloc;
    RawFree m_raw_free;
    std::multimap<std::size_t, void*> m_free;  // size -> cached block
    std::unordered_map<void*, Block> m_live;   // blocks handed out
    std::array<std::int64_t, 6> m_in_use{};
    std::int64_t m_peak_in_use = 0;
    std::int64_t m_reserved = 0, m_peak_reserved = 0, m_cached = 0;
    std::int64_t m_raw_allocations = 0, m_cache_hits = 0, m_unknown_releases = 0;
};

// "1.5 MiB", "512 B", "3.2 GiB".
std::string format_bytes_text(std::int64_t bytes);

}  // namespace mantissa::cuda
