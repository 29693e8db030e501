// UnroundedPieces: the gradient-tracing shadow of a backward's dx that is computed in FP32 and
// rounded piece by piece (batch norm by plane, the pools by sample), when dy has no shadow of its
// own. The shadow is then dx before its rounding, and it tells the statistics something only
// where that rounding flushed a value to zero (CpuBackend::unrounded, cpu_backend.h). So a piece
// is copied into the shadow only when its rounding may flush (numeric/stats.h,
// rounding_may_flush); when no piece may, the shadow is dropped and the passes after it run
// once; when some may, the other pieces' rounded values complete it: their zeros are their own.
// This keeps a bf16 step (whose roundings almost never flush) from writing a shadow of every
// activation gradient, and an fp16 one with small gradients exact.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "numeric/format.h"
#include "numeric/stats.h"

namespace mantissa {

class UnroundedPieces {
public:
    // sdx and sdy as CpuBackend::trace_backward gives them; active only when sdx is dx before its
    // rounding (sdx, no sdy). Piece k is dx[k·size, (k+1)·size); sdx has room for all of them.
    UnroundedPieces(float* sdx, const float* sdy, Format format, std::int64_t pieces, std::int64_t size)
        : m_shadow(sdx && !sdy ? sdx : nullptr), m_format(format), m_size(size),
          m_kept(m_shadow ? static_cast<std::size_t>(pieces) : 0, 0) {}

    bool active() const { return m_shadow != nullptr; }

    // Piece k of dx, computed, before its rounding: kept when the rounding may flush. Any thread,
    // each piece once; nothing when not active.
    void before_rounding(std::int64_t k, const float* piece) {
        const auto n = static_cast<std::size_t>(m_size);
        if (!m_shadow || !rounding_may_flush(m_format, piece, n)) return;
        std::memcpy(m_shadow + k * m_size, piece, n * sizeof(float));
        m_kept[static_cast<std::size_t>(k)] = 1;
    }

    // For a pass that rounds a piece as it computes it: the bit pattern a non-zero magnitude must
    // be below for the rounding to flush it (rounding_may_flush's test), and, when some value of
    // piece k was, where to write the piece before its rounding (the same values before_rounding
    // would have kept). Any thread, each piece once.
    std::uint32_t flush_below() const { return std::bit_cast<std::uint32_t>(format_info(m_format).min_subnormal); }
    float* keep(std::int64_t k) {
        m_kept[static_cast<std::size_t>(k)] = 1;
        return m_shadow + k * m_size;
    }

    // Once every piece is rounded (dx: the rounded values): whether an active shadow turned out
    // not to be needed (the caller drops it); when it is needed, the pieces not kept are copied
    // in from dx.
    bool unneeded(const float* dx) {
        if (!m_shadow) return false;
        bool any = false;
        for (unsigned char kept : m_kept) any = any || kept != 0;
        if (!any) return true;
        for (std::size_t k = 0; k < m_kept.size(); ++k) {
            if (m_kept[k]) continue;
            const std::int64_t at = static_cast<std::int64_t>(k) * m_size;
            std::memcpy(m_shadow + at, dx + at, static_cast<std::size_t>(m_size) * sizeof(float));
        }
        return false;
    }

private:
    float* m_shadow;  // null: not active
    Format m_format;
    std::int64_t m_size;
    std::vector<unsigned char> m_kept;  // per piece: copied before its rounding
};

}  // namespace mantissa
