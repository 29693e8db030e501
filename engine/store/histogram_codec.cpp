// Encoder and decoder of the grad_exponents blob; the format is described in histogram_codec.h
// and docs/schema.md. The decoder never reads past the blob and rejects counts beyond 32 bits.
#include "store/histogram_codec.h"

#include <algorithm>
#include <limits>

namespace mantissa::store {

namespace {

constexpr std::uint8_t encoding_version = 0x01;

std::uint8_t* put_varint(std::uint8_t* p, std::uint64_t v) {
    while (v >= 0x80) {
        *p++ = static_cast<std::uint8_t>(v | 0x80);
        v >>= 7;
    }
    *p++ = static_cast<std::uint8_t>(v);
    return p;
}

bool get_varint(std::span<const std::uint8_t> in, std::size_t& pos, std::uint64_t& v) {
    v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
        if (pos >= in.size()) return false;
        std::uint8_t b = in[pos++];
        v |= static_cast<std::uint64_t>(b & 0x7f) << shift;
        if (!(b & 0x80)) return true;
    }
    return false;
}

std::uint64_t zigzag(std::int64_t v) {
    return (static_cast<std::uint64_t>(v) << 1) ^ static_cast<std::uint64_t>(v >> 63);
}
std::int64_t unzigzag(std::uint64_t v) {
    return static_cast<std::int64_t>(v >> 1) ^ -static_cast<std::int64_t>(v & 1);
}

}  // namespace

void append_histogram(const ExponentHistogram& h, std::vector<std::uint8_t>& out) {
    // Encoded on the stack, then appended at once (this runs on the training thread).
    std::uint8_t buf[1 + 10 + 10 + 5 * ExponentHistogram::bins];
    std::uint8_t* p = buf;
    *p++ = encoding_version;
    // The first and last non-zero bins, eight bins at a time (most of the 278 are zero).
    constexpr int n = ExponentHistogram::bins;
    const std::uint32_t* c = h.counts.data();
    auto any8 = [c](int i) {
        return (c[i] | c[i + 1] | c[i + 2] | c[i + 3] | c[i + 4] | c[i + 5] | c[i + 6] | c[i + 7]) != 0;
    };
    int first = 0;
    while (first + 8 <= n && !any8(first)) first += 8;
    while (first < n && c[first] == 0) ++first;
    if (first == n) {  // all zero
        p = put_varint(p, 0);
        p = put_varint(p, 0);
    } else {
        int last = n - 1;
        while (last - 8 >= first && !any8(last - 7)) last -= 8;
        while (c[last] == 0) --last;
        p = put_varint(p, zigzag(ExponentHistogram::min_exponent + first));
        p = put_varint(p, static_cast<std::uint64_t>(last - first + 1));
        for (int i = first; i <= last; ++i) p = put_varint(p, h.counts[i]);
    }
    out.insert(out.end(), buf, p);
}

bool decode_histogram(std::span<const std::uint8_t> blob, ExponentHistogram& h) {
    h.counts.fill(0);
    if (blob.empty()) return true;
    if (blob[0] != encoding_version) return false;
    std::size_t pos = 1;
    std::uint64_t e0_raw = 0, n = 0;
    if (!get_varint(blob, pos, e0_raw) || !get_varint(blob, pos, n)) return false;
    if (n > blob.size()) return false;  // every count takes at least one byte
    std::int64_t e = unzigzag(e0_raw);
    if (e < -(std::int64_t{1} << 31) || e > (std::int64_t{1} << 31)) return false;
    for (std::uint64_t i = 0; i < n; ++i, ++e) {
        std::uint64_t c = 0;
        if (!get_varint(blob, pos, c) || c > std::numeric_limits<std::uint32_t>::max()) {
            h.counts.fill(0);
            return false;
        }
        std::int64_t bin =
            std::clamp<std::int64_t>(e - ExponentHistogram::min_exponent, 0, ExponentHistogram::bins - 1);
        std::uint64_t sum = h.counts[bin] + c;
        h.counts[bin] =
            static_cast<std::uint32_t>(std::min<std::uint64_t>(sum, std::numeric_limits<std::uint32_t>::max()));
    }
    if (pos != blob.size()) {
        h.counts.fill(0);
        return false;
    }
    return true;
}

}  // namespace mantissa::store
