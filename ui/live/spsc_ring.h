// SpscRing: a bounded single-producer single-consumer ring of preallocated slots, lock-free.
//
// Why: the training thread must never wait on the GUI. The producer fills a slot in place (so a
// slot's vectors and strings keep their capacity and a steady run allocates nothing) and publishes
// it with one release store; when the ring is full, try_push returns false at once and the caller
// counts the drop. The consumer (the GUI thread's timer) reads slots in place and releases them.
//
// Threads: exactly one producer thread calls tryPush, exactly one consumer thread calls tryPop and
// drain; size() may be read from either (it is a snapshot).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <new>
#include <vector>

namespace mantissa::ui {

template <typename T>
class SpscRing {
public:
    // Capacity is rounded up to a power of two (at least 2).
    explicit SpscRing(std::size_t capacity) {
        std::size_t c = 2;
        while (c < capacity) c <<= 1;
        m_slots.resize(c);
        m_mask = c - 1;
    }
    SpscRing(const SpscRing&) = delete;
    SpscRing& operator=(const SpscRing&) = delete;

    std::size_t capacity() const { return m_slots.size(); }
    std::size_t size() const {
        return static_cast<std::size_t>(m_tail.load(std::memory_order_acquire) -
                                        m_head.load(std::memory_order_acquire));
    }

    // Producer only. Calls fill(T&) on a free slot and publishes it; false (and fill is not
    // called) when the ring is full.
    template <typename Fill>
    bool tryPush(Fill&& fill) {
        const std::uint64_t tail = m_tail.load(std::memory_order_relaxed);
        if (tail - m_head.load(std::memory_order_acquire) == m_slots.size()) return false;
        fill(m_slots[tail & m_mask]);
        m_tail.store(tail + 1, std::memory_order_release);
        return true;
    }

    // Consumer only. Calls consume(T&) on the oldest slot and frees it; false when empty.
    template <typename Consume>
    bool tryPop(Consume&& consume) {
        const std::uint64_t head = m_head.load(std::memory_order_relaxed);
        if (head == m_tail.load(std::memory_order_acquire)) return false;
        consume(m_slots[head & m_mask]);
        m_head.store(head + 1, std::memory_order_release);
        return true;
    }

    // Consumer only. Pops up to `max` slots; returns how many.
    template <typename Consume>
    std::size_t drain(Consume&& consume, std::size_t max = SIZE_MAX) {
        std::size_t n = 0;
        while (n < max && tryPop(consume)) ++n;
        return n;
    }

private:
    // Producer and consumer indices on separate cache lines, so neither thread's writes evict the
    // other's line. Indices grow without wrapping (64 bits); the slot is index & mask.
    static constexpr std::size_t cacheLine = 64;
    alignas(cacheLine) std::atomic<std::uint64_t> m_head{0};  // written by the consumer
    alignas(cacheLine) std::atomic<std::uint64_t> m_tail{0};  // written by the producer
    alignas(cacheLine) std::vector<T> m_slots;
    std::size_t m_mask = 0;
};

}  // namespace mantissa::ui
