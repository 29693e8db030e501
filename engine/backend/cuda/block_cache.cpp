// BlockCache: size rounding, best-fit reuse, accounting and the out-of-memory retry (see the
// header for the invariants).
#include "backend/cuda/block_cache.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "error.h"

namespace mantissa::cuda {

namespace {

constexpr std::size_t small_step = 512;
constexpr std::size_t large_threshold = std::size_t{1} << 20;  // 1 MiB
constexpr std::size_t large_step = std::size_t{2} << 20;       // 2 MiB

std::size_t round_up(std::size_t n, std::size_t step) {
    return (n + step - 1) / step * step;
}

}  // namespace

std::string format_bytes_text(std::int64_t bytes) {
    const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    double v = static_cast<double>(bytes);
    int u = 0;
    while (std::abs(v) >= 1024.0 && u < 4) {
        v /= 1024.0;
        ++u;
    }
    char buf[48];
    if (u == 0)
        std::snprintf(buf, sizeof buf, "%lld B", static_cast<long long>(bytes));
    else
        std::snprintf(buf, sizeof buf, "%.1f %s", v, units[u]);
    return buf;
}

BlockCache::BlockCache(RawAlloc raw_alloc, RawFree raw_free)
    : m_raw_alloc(std::move(raw_alloc)), m_raw_free(std::move(raw_free)) {}

BlockCache::~BlockCache() {
    trim();
    for (auto& [ptr, block] : m_live) m_raw_free(ptr);
    m_live.clear();
}

std::size_t BlockCache::rounded_size(std::size_t bytes) {
    if (bytes == 0) return small_step;
    if (bytes < large_threshold) return round_up(bytes, small_step);
    return round_up(bytes, large_step);
}

void* BlockCache::raw(std::size_t size) {
    void* p = m_raw_alloc(size);
    if (!p) return nullptr;
    ++m_raw_allocations;
    m_reserved += static_cast<std::int64_t>(size);
    m_peak_reserved = std::max(m_peak_reserved, m_reserved);
    return p;
}

BlockCache::Block BlockCache::allocate(std::size_t bytes, MemoryCategory category, const std::string& what) {
    const std::size_t size = rounded_size(bytes);
    Block block;
    block.requested = bytes;
    block.category = category;
    // Best fit: the smallest cached block of at least `size`, if it is at most a quarter larger.
    auto it = m_free.lower_bound(size);
    if (it != m_free.end() && it->first <= size + size / 4) {
        block.ptr = it->second;
        block.size = it->first;
        m_cached -= static_cast<std::int64_t>(it->first);
        m_free.erase(it);
        ++m_cache_hits;
    } else {
        block.ptr = raw(size);
        if (!block.ptr && trim() > 0) block.ptr = raw(size);
        if (!block.ptr)
            throw Error("Out of GPU memory: " + format_bytes_text(static_cast<std::int64_t>(size)) + " for " + what +
                        " (" + memory_category_name(category) + ") could not be allocated; in use: " + describe() +
                        ". Use a smaller batch or model, or lower-precision formats.");
        block.size = size;
    }
    m_live.emplace(block.ptr, block);
    m_in_use[static_cast<std::size_t>(category)] += static_cast<std::int64_t>(bytes);
    m_peak_in_use = std::max(m_peak_in_use, in_use_total());
    return block;
}

void BlockCache::release(void* ptr) noexcept {
    if (!ptr) return;
    auto it = m_live.find(ptr);
    if (it == m_live.end()) {
        ++m_unknown_releases;
        return;
    }
    const Block b = it->second;
    m_live.erase(it);
    m_in_use[static_cast<std::size_t>(b.category)] -= static_cast<std::int64_t>(b.requested);
    try {
        m_free.emplace(b.size, b.ptr);
        m_cached += static_cast<std::int64_t>(b.size);
    } catch (...) {  // no memory for the free-list node: give the block back instead
        m_raw_free(b.ptr);
        m_reserved -= static_cast<std::int64_t>(b.size);
    }
}

std::size_t BlockCache::trim() noexcept {
    std::size_t freed = 0;
    for (auto& [size, ptr] : m_free) {
        m_raw_free(ptr);
        freed += size;
    }
    m_free.clear();
    m_reserved -= static_cast<std::int64_t>(freed);
    m_cached = 0;
    return freed;
}

std::int64_t BlockCache::in_use_total() const {
    std::int64_t total = 0;
    for (std::int64_t b : m_in_use) total += b;
    return total;
}

void BlockCache::reset_peaks() {
    m_peak_in_use = in_use_total();
    m_peak_reserved = m_reserved;
}

std::string BlockCache::describe() const {
    std::string text;
    for (std::size_t c = 0; c < m_in_use.size(); ++c) {
        if (m_in_use[c] == 0) continue;
        if (!text.empty()) text += ", ";
        text +=
            std::string(memory_category_name(static_cast<MemoryCategory>(c))) + " " + format_bytes_text(m_in_use[c]);
    }
    if (text.empty()) text = "nothing";
    text += "; cached " + format_bytes_text(m_cached);
    return text;
}

}  // namespace mantissa::cuda
