// The block-scaled formats (engine/numeric/element_format.h, block_format.h, describe_block.h)
// against references written here from the definitions alone:
// - every code of fp6-e3m2, fp6-e2m3, fp4-e2m1 (and the fp8 elements, and E8M0's 256 codes) decoded
//   from (-1)^s * 2^(e-bias) * (1 + m/2^M) (subnormals 2^(1-bias) * m/2^M) and re-encoded; rounding
//   checked at every midpoint between neighbours (ties to the even code) and just either side of
//   it, and beyond the largest value (saturation);
// - the MX scale rule on edge blocks, and NVFP4's two scales;
// - a reference quantiser in double arithmetic (MX: the spec's floor(log2(amax)) - emax_elem and a
//   nearest-value search; NVFP4: the recipe's FP32 steps, each rounded to FP32 from an exact double)
//   compared bit for bit with the library on many random blocks of all six formats;
// - dequantise(quantise(x)) == round_blocks(x) bit for bit, in place too.
#include <QtTest>

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "error.h"
#include "numeric/block_format.h"
#include "numeric/describe_block.h"
#include "numeric/stochastic_round.h"
#include "exact_compare.h"

using namespace mantissa;
Q_DECLARE_METATYPE(mantissa::ElementFormat)
Q_DECLARE_METATYPE(mantissa::BlockFormat)

namespace {

constexpr float fmax32 = std::numeric_limits<float>::max();
const float qnan = std::numeric_limits<float>::quiet_NaN();
const float inf = std::numeric_limits<float>::infinity();

// ---- the element formats from their definitions

enum class Special { none, e4m3fn, ieee };  // none: every code finite (fp6/fp4, OCP MX v1.0)

struct RefElement {
    int E, M, bias, bits;
    Special special;
    std::vector<double> magnitudes;  // value of magnitude code k (NaN for a NaN/inf code)
    std::vector<int> finite_codes;   // magnitude codes of finite values, ascending by value

    RefElement(int E_, int M_, Special s) : E(E_), M(M_), bias((1 << (E_ - 1)) - 1), bits(1 + E_ + M_), special(s) {
        const int top = (1 << E) - 1;
        for (int k = 0; k < (1 << (E + M)); ++k) {
            const int e = k >> M, m = k & ((1 << M) - 1);
            double v;
            if (special == Special::ieee && e == top) v = m == 0 ? HUGE_VAL : std::nan("");
            else if (special == Special::e4m3fn && e == top && m == (1 << M) - 1) v = std::nan("");
            else if (e == 0) v = std::ldexp(1.0, 1 - bias) * m / (1 << M);
            else v = std::ldexp(1.0, e - bias) * (1.0 + static_cast<double>(m) / (1 << M));
            magnitudes.push_back(v);
            if (std::isfinite(v)) finite_codes.push_back(k);
        }
        // The codes increase with the value, which the nearest search below relies on.
        for (std::size_t i = 1; i < finite_codes.size(); ++i)
            if (!(magnitudes[finite_codes[i]] > magnitudes[finite_codes[i - 1]])) qFatal("reference table not sorted");
    }

    double max_finite() const { return magnitudes[finite_codes.back()]; }

    double value(int code) const {
        const double v = magnitudes[code & ((1 << (E + M)) - 1)];
        return (code >> (E + M)) & 1 ? -v : v;
    }

    // Round to nearest, ties to the even code, beyond the largest value clamped to it (the MX rule).
    int round_saturate(double x) const {
        const int sign = std::signbit(x) ? 1 << (E + M) : 0;
        const double a = std::fabs(x);
        if (std::isinf(a) || a >= max_finite()) return sign | finite_codes.back();
        int best = finite_codes.front();
        for (std::size_t i = 0; i + 1 < finite_codes.size(); ++i) {
            const int lo = finite_codes[i], hi = finite_codes[i + 1];
            if (a >= magnitudes[lo] && a <= magnitudes[hi]) {
                const double dlo = a - magnitudes[lo], dhi = magnitudes[hi] - a;
                best = dlo < dhi ? lo : dhi < dlo ? hi : (lo % 2 == 0 ? lo : hi);
                break;
            }
        }
        return sign | best;
    }
};

const RefElement& ref(ElementFormat f) {
    static const RefElement e4m3(4, 3, Special::e4m3fn), e5m2(5, 2, Special::ieee), e3m2(3, 2, Special::none),
        e2m3(2, 3, Special::none), e2m1(2, 1, Special::none);
    switch (f) {
    case ElementFormat::fp8_e4m3: return e4m3;
    case ElementFormat::fp8_e5m2: return e5m2;
    case ElementFormat::fp6_e3m2: return e3m2;
    case ElementFormat::fp6_e2m3: return e2m3;
    default: return e2m1;
    }
}

int ref_emax(ElementFormat f) {  // unbiased exponent of the largest normal, from the table
    return std::ilogb(ref(f).max_finite());
}

bool same(float a, float b) {
    if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b);
    return std::bit_cast<std::uint32_t>(a) == std::bit_cast<std::uint32_t>(b);
}

QString show(float x) {
    return QString("%1 (0x%2)").arg(static_cast<double>(x), 0, 'g', 10).arg(std::bit_cast<std::uint32_t>(x), 8, 16, QChar('0'));
}

// ---- the reference quantisers

struct RefBlocks {
    std::vector<int> codes, scales;
    std::vector<float> values;
    float tensor_scale = 1;
    BlockStats stats;
};

bool finite(float x) { return std::isfinite(x); }

// OCP MX v1.0, section 6.3, in double: X = 2^(floor(log2(max|V|)) - emax_elem), in E8M0's range;
// P_i = V_i / X rounded to the element format, normal values beyond its range clamped.
void ref_mx_block(ElementFormat el, const float* x, std::size_t count, RefBlocks& out) {
    const RefElement& r = ref(el);
    ++out.stats.blocks;
    out.stats.values += count;
    bool special = false;
    double amax = 0;
    for (std::size_t i = 0; i < count; ++i) {
        if (!finite(x[i])) special = true;
        else amax = std::max(amax, std::fabs(static_cast<double>(x[i])));
    }
    if (special) {
        out.scales.push_back(0xFF);
        ++out.stats.nan_blocks;
        for (std::size_t i = 0; i < count; ++i) {
            out.codes.push_back(0);
            out.values.push_back(qnan);
        }
        return;
    }
    int e = amax == 0 ? -127 : static_cast<int>(std::floor(std::log2(amax))) - ref_emax(el);
    e = std::clamp(e, -127, 127);
    out.scales.push_back(e + 127);
    for (std::size_t i = 0; i < count; ++i) {
        const double scaled = std::ldexp(static_cast<double>(x[i]), -e);
        const int code = r.round_saturate(scaled);
        if (std::fabs(scaled) > r.max_finite()) ++out.stats.saturated;
        const double v = std::ldexp(r.value(code), e);
        if (x[i] != 0 && v == 0) ++out.stats.flushed_to_zero;
        out.codes.push_back(code);
        out.values.push_back(static_cast<float>(v));  // exact
    }
}

float f32(double x) { return static_cast<float>(x); }  // one FP32 rounding of an exact double

// NVFP4 as the reference recipe writes it, each FP32 operation an exact double product or quotient
// of two floats rounded once to FP32 (which is the correctly rounded FP32 result).
RefBlocks ref_quantise(BlockFormat format, const float* x, std::size_t n) {
    RefBlocks out;
    const BlockFormatInfo& info = block_format_info(format);
    const auto B = static_cast<std::size_t>(info.block_size);
    if (format != BlockFormat::nvfp4) {
        for (std::size_t first = 0; first < n; first += B) ref_mx_block(info.element, x + first, std::min(B, n - first), out);
        return out;
    }
    const RefElement& e2m1 = ref(ElementFormat::fp4_e2m1);
    const RefElement& e4m3 = ref(ElementFormat::fp8_e4m3);
    double tensor_amax = 0;
    for (std::size_t i = 0; i < n; ++i)
        if (finite(x[i])) tensor_amax = std::max(tensor_amax, std::fabs(static_cast<double>(x[i])));
    const float S = tensor_amax == 0 ? 1.0f : f32(std::min(448.0 * 6.0 / tensor_amax, static_cast<double>(fmax32)));
    out.tensor_scale = S;
    const float sixth = f32(1.0 / 6.0);
    const float multiplier = f32(static_cast<double>(S) * sixth);
    const float S_dec = f32(1.0 / S);
    for (std::size_t first = 0; first < n; first += B) {
        const std::size_t count = std::min(B, n - first);
        ++out.stats.blocks;
        out.stats.values += count;
        bool special = false;
        float amax = 0;
        for (std::size_t i = first; i < first + count; ++i) {
            if (!finite(x[i])) special = true;
            else amax = std::max(amax, std::fabs(x[i]));
        }
        if (special) {
            out.scales.push_back(0x7F);
            ++out.stats.nan_blocks;
            for (std::size_t i = 0; i < count; ++i) {
                out.codes.push_back(0);
                out.values.push_back(qnan);
            }
            continue;
        }
        const float block_scale = f32(std::min(static_cast<double>(amax) * multiplier, static_cast<double>(fmax32)));
        const int scale_code = e4m3.round_saturate(block_scale);
        out.scales.push_back(scale_code);
        const float decoded = static_cast<float>(e4m3.value(scale_code));
        const float decode_factor = f32(static_cast<double>(decoded) * S_dec);
        const float encode_factor = decode_factor == 0 ? fmax32 : f32(std::min(1.0 / decode_factor, static_cast<double>(fmax32)));
        for (std::size_t i = first; i < first + count; ++i) {
            const float scaled = f32(static_cast<double>(x[i]) * encode_factor);
            const int code = e2m1.round_saturate(std::clamp(static_cast<double>(scaled), -6.0, 6.0));
            if (decoded != 0 && std::fabs(scaled) > 6) ++out.stats.saturated;
            const float v = f32(e2m1.value(code) * decode_factor);
            if (x[i] != 0 && v == 0) ++out.stats.flushed_to_zero;
            out.codes.push_back(code);
            out.values.push_back(v);
        }
    }
    return out;
}

// ---- random data

// Blocks of values with a block-wide magnitude anywhere in fp32's range, each value drawn to hit
// the interesting cases: exact element values and exact midpoints at the block's scale, zeros,
// signed zeros, values far below the block's amax, fp32 subnormals.
// The block-wide magnitudes are 2^[lowest, highest): NVFP4 tensors also get a narrow range, so
// that most blocks keep a non-zero E4M3 scale next to the tensor's largest block.
std::vector<float> random_values(std::mt19937_64& rng, std::size_t n, int block_size, ElementFormat el,
                                 int lowest = -150, int highest = 127) {
    std::vector<float> x(n);
    std::uniform_int_distribution<int> exp_dist(lowest, highest), kind(0, 9), small_exp(-40, 0);
    std::uniform_real_distribution<double> unit(-1.0, 1.0);
    const RefElement& r = ref(el);
    std::uniform_int_distribution<std::size_t> pick(0, r.finite_codes.size() - 1);
    for (std::size_t first = 0; first < n; first += static_cast<std::size_t>(block_size)) {
        const int e = exp_dist(rng) - ref_emax(el);
        for (std::size_t i = first; i < std::min(n, first + block_size); ++i) {
            double v;
            const std::size_t k = pick(rng);
            switch (kind(rng)) {
            case 0: v = 0.0; break;
            case 1: v = -0.0; break;
            case 2: v = std::ldexp(r.magnitudes[r.finite_codes[k]], e); break;  // exact element value
            case 3:
                if (k + 1 < r.finite_codes.size())  // an exact tie between two element values
                    v = std::ldexp((r.magnitudes[r.finite_codes[k]] + r.magnitudes[r.finite_codes[k + 1]]) / 2, e);
                else
                    v = std::ldexp(r.max_finite() * 1.03, e);  // just past the element max
                break;
            case 4: v = std::ldexp(unit(rng), e + small_exp(rng)); break;  // far below the block's amax
            default: v = std::ldexp(unit(rng) * r.max_finite() * 1.1, e); break;
            }
            if (unit(rng) < 0) v = -v;
            x[i] = static_cast<float>(v);
        }
    }
    return x;
}

void compare(BlockFormat format, const std::vector<float>& x, const BlockQuantised& q, const BlockStats& stats,
             const RefBlocks& r) {
    const auto B = static_cast<std::size_t>(block_format_info(format).block_size);
    QCOMPARE(q.elements.size(), r.codes.size());
    QCOMPARE(q.scales.size(), r.scales.size());
    QVERIFY(same(q.tensor_scale, r.tensor_scale));
    std::vector<float> back(x.size());
    dequantise_blocks(q, back.data());
    for (std::size_t b = 0; b < q.scales.size(); ++b)
        if (q.scales[b] != r.scales[b])
            QFAIL(qPrintable(QString("%1 block %2: scale 0x%3, reference 0x%4 (first value %5)")
                                 .arg(block_format_name(format).data()).arg(b).arg(q.scales[b], 0, 16)
                                 .arg(r.scales[b], 0, 16).arg(show(x[b * B]))));
    for (std::size_t i = 0; i < x.size(); ++i) {
        if (q.elements[i] != r.codes[i] || !same(back[i], r.values[i]))
            QFAIL(qPrintable(QString("%1 value %2 = %3: code 0x%4 -> %5, reference 0x%6 -> %7 (scale 0x%8)")
                                 .arg(block_format_name(format).data()).arg(i).arg(show(x[i]))
                                 .arg(q.elements[i], 0, 16).arg(show(back[i])).arg(r.codes[i], 0, 16)
                                 .arg(show(r.values[i])).arg(q.scales[i / B], 0, 16)));
    }
    QCOMPARE(stats.blocks, r.stats.blocks);
    QCOMPARE(stats.values, r.stats.values);
    QCOMPARE(stats.flushed_to_zero, r.stats.flushed_to_zero);
    QCOMPARE(stats.saturated, r.stats.saturated);
    QCOMPARE(stats.nan_blocks, r.stats.nan_blocks);
}

void add_element_rows() {
    QTest::addColumn<ElementFormat>("format");
    for (ElementFormat f : all_element_formats) QTest::newRow(element_format_name(f).data()) << f;
}

void add_block_rows(bool mx_only) {
    QTest::addColumn<BlockFormat>("format");
    for (BlockFormat f : all_block_formats)
        if (!mx_only || f != BlockFormat::nvfp4) QTest::newRow(block_format_name(f).data()) << f;
}

// Quantises x and checks it against the reference; returns the quantised form for more checks.
BlockQuantised quantise_checked(BlockFormat format, const std::vector<float>& x, BlockStats* stats_out = nullptr) {
    BlockQuantised q;
    const BlockStats stats = quantise_blocks(format, x.data(), x.size(), q);
    compare(format, x, q, stats, ref_quantise(format, x.data(), x.size()));
    if (stats_out) *stats_out = stats;
    return q;
}

std::vector<float> decoded(const BlockQuantised& q) {
    std::vector<float> out(q.elements.size());
    dequantise_blocks(q, out.data());
    return out;
}

// round_blocks(x) == dequantise(quantise_blocks(x)), bit for bit, with the same counts; *want
// receives the decoded values, *quantised the quantiser's counts.
void check_round_blocks(BlockFormat format, const std::vector<float>& x, std::vector<float>* want,
                        BlockStats* quantised) {
    BlockQuantised q;
    const BlockStats qs = quantise_blocks(format, x.data(), x.size(), q);
    *want = decoded(q);
    *quantised = qs;
    std::vector<float> got(x.size());
    const BlockStats rs = round_blocks(format, x.data(), got.data(), x.size());
    for (std::size_t i = 0; i < x.size(); ++i)
        if (!same(got[i], (*want)[i]) || std::isnan(got[i]) != std::isnan((*want)[i]))
            QFAIL(qPrintable(QString("value %1 = %2: round_blocks %3, dequantise(quantise) %4")
                                 .arg(i).arg(show(x[i])).arg(show(got[i])).arg(show((*want)[i]))));
    QCOMPARE(rs.blocks, qs.blocks);
    QCOMPARE(rs.values, qs.values);
    QCOMPARE(rs.flushed_to_zero, qs.flushed_to_zero);
    QCOMPARE(rs.saturated, qs.saturated);
    QCOMPARE(rs.nan_blocks, qs.nan_blocks);
}

}  // namespace

class TestBlockFormats : public QObject {
    Q_OBJECT
private slots:
    // ---- element formats

    void elementConstants() {
        struct Row { ElementFormat f; int bits, e, m, bias, emax; float max, min_normal, min_sub; bool inf, nan; };
        const Row rows[] = {
            {ElementFormat::fp8_e4m3, 8, 4, 3, 7, 8, 448.0f, 0x1p-6f, 0x1p-9f, false, true},
            {ElementFormat::fp8_e5m2, 8, 5, 2, 15, 15, 57344.0f, 0x1p-14f, 0x1p-16f, true, true},
            {ElementFormat::fp6_e3m2, 6, 3, 2, 3, 4, 28.0f, 0.25f, 0.0625f, false, false},
            {ElementFormat::fp6_e2m3, 6, 2, 3, 1, 2, 7.5f, 1.0f, 0.125f, false, false},
            {ElementFormat::fp4_e2m1, 4, 2, 1, 1, 2, 6.0f, 1.0f, 0.5f, false, false},
        };
        for (const Row& r : rows) {
            const ElementFormatInfo& i = element_format_info(r.f);
            QCOMPARE(i.format, r.f);
            QCOMPARE(i.bits, r.bits);
            QCOMPARE(i.exponent_bits, r.e);
            QCOMPARE(i.mantissa_bits, r.m);
            QCOMPARE(i.bias, r.bias);
            QCOMPARE(i.emax, r.emax);
            QCOMPARE(i.max_finite, r.max);
            QCOMPARE(i.min_normal, r.min_normal);
            QCOMPARE_EXACT(i.min_subnormal, r.min_sub);
            QCOMPARE(i.has_inf, r.inf);
            QCOMPARE(i.has_nan, r.nan);
            QCOMPARE(static_cast<double>(i.max_finite), ref(r.f).max_finite());
            QCOMPARE(parse_element_format(i.name), std::optional<ElementFormat>(r.f));
        }
        QCOMPARE(parse_element_format("FP4"), std::optional<ElementFormat>(ElementFormat::fp4_e2m1));
        QCOMPARE(parse_element_format("fp6_e2m3"), std::optional<ElementFormat>(ElementFormat::fp6_e2m3));
        QVERIFY(!parse_element_format("fp6"));
        QVERIFY(!parse_element_format(""));
    }

    // Every code decodes to the value its fields define, and re-encodes to itself.
    void everyCode_data() { add_element_rows(); }
    void everyCode() {
        QFETCH(ElementFormat, format);
        const RefElement& r = ref(format);
        int finite_codes = 0;
        for (int code = 0; code < (1 << r.bits); ++code) {
            const float v = decode_element(format, static_cast<std::uint8_t>(code));
            const double want = r.value(code);
            if (std::isnan(want)) {
                QVERIFY2(std::isnan(v), qPrintable(QString("code 0x%1 should be NaN").arg(code, 0, 16)));
                QVERIFY(std::isnan(decode_element(format, encode_element(format, v))));
                continue;
            }
            if (std::isinf(want)) {  // fp8-e5m2's infinities: kept when overflow goes to inf
                QVERIFY(same(v, static_cast<float>(want)));
                QCOMPARE(int(encode_element(format, v, Overflow::to_inf)), code);
                continue;
            }
            ++finite_codes;
            if (!same(v, static_cast<float>(want)))
                QFAIL(qPrintable(QString("code 0x%1 decodes to %2, not %3").arg(code, 0, 16).arg(show(v)).arg(want)));
            for (Overflow o : {Overflow::saturate, Overflow::to_inf})
                if (encode_element(format, v, o) != code)
                    QFAIL(qPrintable(QString("code 0x%1 (%2) re-encodes to 0x%3").arg(code, 0, 16).arg(show(v))
                                         .arg(encode_element(format, v, o), 0, 16)));
        }
        const int all = 1 << r.bits;
        QCOMPARE(finite_codes, format == ElementFormat::fp8_e4m3 ? all - 2
                               : format == ElementFormat::fp8_e5m2 ? all - 8 : all);
        // High bits beyond the code are ignored by the small formats' decoder.
        if (r.bits < 8) QVERIFY(same(decode_element(format, static_cast<std::uint8_t>(0xC0 | 1)), decode_element(format, 1)));
    }

    // Rounding at and around every midpoint between neighbouring values, both signs; ties go to
    // the even code. Beyond the largest value, saturation.
    void midpoints_data() { add_element_rows(); }
    void midpoints() {
        QFETCH(ElementFormat, format);
        const RefElement& r = ref(format);
        const int sign_bit = 1 << (r.bits - 1);
        int ties_checked = 0;
        for (std::size_t i = 0; i + 1 < r.finite_codes.size(); ++i) {
            const int lo = r.finite_codes[i], hi = r.finite_codes[i + 1];
            const float mid = static_cast<float>((r.magnitudes[lo] + r.magnitudes[hi]) / 2);  // exact
            QCOMPARE(static_cast<double>(mid), (r.magnitudes[lo] + r.magnitudes[hi]) / 2);
            const int even = lo % 2 == 0 ? lo : hi;
            QCOMPARE(lo % 2 == 0, hi % 2 != 0);  // neighbours: one code of each parity
            for (int s : {0, 1}) {
                const float m = s ? -mid : mid;
                const int sign = s ? sign_bit : 0;
                const float below = std::nextafter(m, 0.0f), above = std::nextafter(m, s ? -inf : inf);
                QCOMPARE(int(encode_element(format, m, Overflow::saturate)), sign | even);
                QCOMPARE(int(encode_element(format, below, Overflow::saturate)), sign | lo);
                QCOMPARE(int(encode_element(format, above, Overflow::saturate)), sign | hi);
                ++ties_checked;
            }
        }
        QCOMPARE(ties_checked, 2 * static_cast<int>(r.finite_codes.size() - 1));

        // Past the largest value: half an ulp past it and beyond all saturate (fp8 asks for it;
        // fp6/fp4 have no other choice), as do the infinities.
        const int max_code = r.finite_codes.back();
        const float max = static_cast<float>(r.max_finite());
        const float top_ulp = static_cast<float>(r.max_finite() - r.magnitudes[r.finite_codes[r.finite_codes.size() - 2]]);
        for (float big : {max + top_ulp / 2, std::nextafter(max + top_ulp / 2, inf), max * 2, fmax32, inf}) {
            QCOMPARE(int(encode_element(format, big, Overflow::saturate)), max_code);
            QCOMPARE(int(encode_element(format, -big, Overflow::saturate)), sign_bit | max_code);
        }
        // fp6/fp4 saturate even when overflow to inf is asked for, and have no NaN: a NaN encodes
        // as the zero of its sign. fp8 keeps convert.h's behaviour.
        if (!element_format_info(format).has_nan) {
            QCOMPARE(int(encode_element(format, inf, Overflow::to_inf)), max_code);
            QCOMPARE(int(encode_element(format, qnan)), 0);
            QCOMPARE(int(encode_element(format, -qnan)), sign_bit);
        } else {
            QVERIFY(std::isnan(decode_element(format, encode_element(format, qnan))));
            const float over = decode_element(format, encode_element(format, max * 2, Overflow::to_inf));
            QVERIFY(std::isinf(over) || std::isnan(over));
        }
        // Signed zeros and values below half the smallest subnormal keep their sign.
        const float tiny = static_cast<float>(r.magnitudes[1] / 2);  // a tie with zero: rounds to zero (even)
        QCOMPARE(int(encode_element(format, -0.0f)), sign_bit);
        QCOMPARE(int(encode_element(format, -tiny)), sign_bit);
        QCOMPARE(int(encode_element(format, std::nextafter(tiny, inf))), 1);
        QCOMPARE(int(encode_element(format, 0x1p-149f)), 0);
    }

    // Random fp32 inputs over and around each element format's range against the nearest search.
    void randomElements_data() { add_element_rows(); }
    void randomElements() {
        QFETCH(ElementFormat, format);
        const RefElement& r = ref(format);
        std::mt19937_64 rng(42 + static_cast<int>(format));
        const int lo = std::ilogb(r.magnitudes[1]) - 3, hi = std::ilogb(r.max_finite()) + 2;
        std::uniform_int_distribution<int> e(lo, hi);
        std::uniform_int_distribution<std::uint32_t> mant(0, 0x7fffff), sign(0, 1);
        for (int k = 0; k < 200000; ++k) {
            const float x = (sign(rng) ? -1.0f : 1.0f) * std::ldexp(1.0f + static_cast<float>(mant(rng)) * 0x1p-23f, e(rng));
            const int want = r.round_saturate(x);
            const int got = encode_element(format, x, Overflow::saturate);
            if (got != want)
                QFAIL(qPrintable(QString("%1 -> 0x%2, reference 0x%3").arg(show(x)).arg(got, 0, 16).arg(want, 0, 16)));
        }
    }

    // E8M0: all 256 codes, 2^(code - 127), 0xFF the NaN; the exponent encoder clamps.
    void e8m0() {
        for (int code = 0; code < 256; ++code) {
            const float v = decode_e8m0(static_cast<std::uint8_t>(code));
            if (code == 0xFF) {
                QVERIFY(std::isnan(v));
                continue;
            }
            // 2^(code - 127) built from the fp32 bit pattern: a normal for codes >= 1, 2^-127 the
            // subnormal with only bit 22 set.
            const std::uint32_t bits = code == 0 ? 0x00400000u : static_cast<std::uint32_t>(code) << 23;
            QCOMPARE(std::bit_cast<std::uint32_t>(v), bits);
            QCOMPARE(int(encode_e8m0_exponent(code - 127)), code);
        }
        QCOMPARE(int(encode_e8m0_exponent(-200)), 0);
        QCOMPARE(int(encode_e8m0_exponent(128)), 254);
        QCOMPARE(int(encode_e8m0_exponent(1000)), 254);
        QCOMPARE(decode_e8m0(127), 1.0f);
        // NVFP4's E4M3 block scale is fp8-e4m3, saturating.
        QCOMPARE(decode_e4m3_scale(encode_e4m3_scale(1000.0f)), 448.0f);
        QCOMPARE(decode_e4m3_scale(encode_e4m3_scale(0.3f)), 0.3125f);
        QVERIFY(std::isnan(decode_e4m3_scale(e4m3_nan)));
    }

    // ---- block formats

    void blockConstants() {
        struct Row { BlockFormat f; const char* name; ElementFormat el; int block; ScaleKind scale; double bits; };
        const Row rows[] = {
            {BlockFormat::mxfp8_e4m3, "mxfp8-e4m3", ElementFormat::fp8_e4m3, 32, ScaleKind::e8m0, 8.25},
            {BlockFormat::mxfp8_e5m2, "mxfp8-e5m2", ElementFormat::fp8_e5m2, 32, ScaleKind::e8m0, 8.25},
            {BlockFormat::mxfp6_e3m2, "mxfp6-e3m2", ElementFormat::fp6_e3m2, 32, ScaleKind::e8m0, 6.25},
            {BlockFormat::mxfp6_e2m3, "mxfp6-e2m3", ElementFormat::fp6_e2m3, 32, ScaleKind::e8m0, 6.25},
            {BlockFormat::mxfp4, "mxfp4", ElementFormat::fp4_e2m1, 32, ScaleKind::e8m0, 4.25},
            {BlockFormat::nvfp4, "nvfp4", ElementFormat::fp4_e2m1, 16, ScaleKind::e4m3_with_tensor_scale, 4.5},
        };
        for (const Row& r : rows) {
            const BlockFormatInfo& i = block_format_info(r.f);
            QCOMPARE(i.format, r.f);
            QCOMPARE(i.name, std::string_view(r.name));
            QCOMPARE(i.element, r.el);
            QCOMPARE(i.block_size, r.block);
            QCOMPARE(i.scale, r.scale);
            QCOMPARE(i.bits_per_value, r.bits);
            QCOMPARE(parse_block_format(r.name), std::optional<BlockFormat>(r.f));
        }
        QCOMPARE(parse_block_format("MXFP8"), std::optional<BlockFormat>(BlockFormat::mxfp8_e4m3));
        QCOMPARE(parse_block_format("mxfp6_e2m3"), std::optional<BlockFormat>(BlockFormat::mxfp6_e2m3));
        QVERIFY(!parse_block_format("mxint8"));
        QVERIFY(!parse_block_format("fp4-e2m1"));
    }

    // An all-zero block takes the smallest scale, 2^-127, and stores zeros of the inputs' signs.
    void mxZeros_data() { add_block_rows(true); }
    void mxZeros() {
        QFETCH(BlockFormat, format);
        std::vector<float> x(32, 0.0f);
        for (std::size_t i = 0; i < x.size(); i += 2) x[i] = -0.0f;
        BlockStats stats;
        const BlockQuantised q = quantise_checked(format, x, &stats);
        QCOMPARE(int(q.scales[0]), 0);
        const auto back = decoded(q);
        for (std::size_t i = 0; i < x.size(); ++i) QVERIFY(same(back[i], x[i]));
        QCOMPARE(stats.flushed_to_zero, std::size_t{0});
    }

    // A NaN or an inf makes the block's scale NaN and the whole block NaN; the next block is not
    // touched.
    void mxNanAndInf_data() { add_block_rows(false); }
    void mxNanAndInf() {
        QFETCH(BlockFormat, format);
        const auto B = static_cast<std::size_t>(block_format_info(format).block_size);
        for (float special : {qnan, -qnan, inf, -inf}) {
            std::vector<float> x(3 * B, 1.5f);
            x[3] = special;
            x[2 * B + B - 1] = special;
            BlockStats stats;
            const BlockQuantised q = quantise_checked(format, x, &stats);
            const auto back = decoded(q);
            for (std::size_t i = 0; i < B; ++i) QVERIFY(std::isnan(back[i]));
            for (std::size_t i = B; i < 2 * B; ++i) QCOMPARE(back[i], 1.5f);
            QCOMPARE(stats.nan_blocks, std::size_t{2});
            QCOMPARE(int(q.scales[0]), format == BlockFormat::nvfp4 ? 0x7F : 0xFF);
            // The tensor scale of NVFP4 ignores the NaN/inf: 1.5 is the tensor's amax.
            if (format == BlockFormat::nvfp4) QCOMPARE(q.tensor_scale, 2688.0f / 1.5f);
        }
    }

    // amax at a power of two, just below one, fp32 subnormal, and at the top of fp32's range.
    void mxScaleEdges_data() { add_block_rows(true); }
    void mxScaleEdges() {
        QFETCH(BlockFormat, format);
        const ElementFormatInfo& el = element_format_info(block_format_info(format).element);
        auto scale_of = [&](std::vector<float> x) {
            x.resize(32, 0.25f * x[0]);
            return int(quantise_checked(format, x).scales[0]) - 127;
        };
        // amax = 2^k exactly: scale 2^(k - emax), and amax itself is the element 2^emax, exact.
        for (int k : {-100, -3, 0, 1, 7, 100}) {
            QCOMPARE(scale_of({std::ldexp(1.0f, k)}), k - el.emax);
            std::vector<float> x(32, 0.0f);
            x[5] = -std::ldexp(1.0f, k);
            QCOMPARE_EXACT(decoded(quantise_checked(format, x))[5], x[5]);
        }
        // Just below 2^k: floor(log2) is k - 1, so the largest value scales to just below
        // 2^(emax+1), past the element max: it saturates.
        for (int k : {-60, 0, 3, 90}) {
            std::vector<float> x(32, 0.0f);
            x[0] = std::nextafter(std::ldexp(1.0f, k), 0.0f);
            BlockStats stats;
            const BlockQuantised q = quantise_checked(format, x, &stats);
            QCOMPARE(int(q.scales[0]) - 127, k - 1 - el.emax);
            QCOMPARE(stats.saturated, std::size_t{1});
            QCOMPARE_EXACT(decoded(q)[0], std::ldexp(el.max_finite, k - 1 - el.emax));
        }
        // fp32 subnormal amaxes: floor(log2) is -127 .. -149, minus emax: clamped to E8M0's -127.
        for (float a : {0x1p-149f, 3 * 0x1p-149f, 0x1p-130f, 0x1.8p-127f}) {
            std::vector<float> x(32, 0.0f);
            x[0] = a;
            x[1] = -a / 4;
            const BlockQuantised q = quantise_checked(format, x);
            QCOMPARE(int(q.scales[0]), 0);  // 2^-127
        }
        // The top of fp32's range: 2^127 and FLT_MAX give 127 - emax, inside E8M0 (no clamp).
        QCOMPARE(scale_of({0x1p127f}), 127 - el.emax);
        QCOMPARE(scale_of({fmax32}), 127 - el.emax);
        std::vector<float> top(32, fmax32);
        top[1] = -fmax32;
        BlockStats stats;
        const auto back = decoded(quantise_checked(format, top, &stats));
        QCOMPARE(back[0], std::ldexp(el.max_finite, 127 - el.emax));
        QCOMPARE(back[1], -std::ldexp(el.max_finite, 127 - el.emax));
        QCOMPARE(stats.saturated, std::size_t{32});  // FLT_MAX / 2^(127-emax) is just below 2^(emax+1)
    }

    // The largest element rounds up past the element max: saturated to it, and counted.
    void mxSaturation_data() { add_block_rows(true); }
    void mxSaturation() {
        QFETCH(BlockFormat, format);
        const ElementFormatInfo& el = element_format_info(block_format_info(format).element);
        // Halfway between max and 2^(emax+1): below 2^(emax+1), so the scale stays 2^0, but the
        // value is above the max.
        const float over = (el.max_finite + std::ldexp(1.0f, el.emax + 1)) / 2;
        std::vector<float> x(32, 1.0f);
        x[7] = over;
        x[9] = -over;
        x[11] = el.max_finite;
        BlockStats stats;
        const BlockQuantised q = quantise_checked(format, x, &stats);
        QCOMPARE(int(q.scales[0]), 127);
        const auto back = decoded(q);
        QCOMPARE(back[7], el.max_finite);
        QCOMPARE(back[9], -el.max_finite);
        QCOMPARE(back[11], el.max_finite);
        QCOMPARE(stats.saturated, std::size_t{2});
    }

    // A last partial block is quantised as if padded with zeros: the same codes as the padded
    // block's first values, one scale per started block, nothing stored for the padding.
    void partialBlock_data() { add_block_rows(false); }
    void partialBlock() {
        QFETCH(BlockFormat, format);
        const auto B = static_cast<std::size_t>(block_format_info(format).block_size);
        std::mt19937_64 rng(7);
        for (std::size_t tail : {std::size_t{1}, std::size_t{5}, B - 1}) {
            std::vector<float> x = random_values(rng, B + tail, static_cast<int>(B), block_format_info(format).element);
            for (float& v : x) if (!std::isfinite(v)) v = 1;
            const BlockQuantised q = quantise_checked(format, x);
            QCOMPARE(q.scales.size(), std::size_t{2});
            QCOMPARE(q.elements.size(), B + tail);
            std::vector<float> padded = x;
            padded.resize(2 * B, 0.0f);
            BlockQuantised p;
            quantise_blocks(format, padded.data(), padded.size(), p);
            QCOMPARE(p.scales, q.scales);
            QCOMPARE(p.tensor_scale, q.tensor_scale);
            QVERIFY(std::equal(q.elements.begin(), q.elements.end(), p.elements.begin()));
        }
        // Fewer values than one block, and none.
        std::vector<float> three = {1.0f, -2.0f, 0.75f};
        const BlockQuantised q = quantise_checked(format, three);
        QCOMPARE(q.scales.size(), std::size_t{1});
        BlockQuantised empty;
        const BlockStats s = quantise_blocks(format, nullptr, 0, empty);
        QVERIFY(empty.elements.empty() && empty.scales.empty());
        QCOMPARE(s.blocks, std::size_t{0});
        QCOMPARE(round_blocks(format, nullptr, nullptr, 0).values, std::size_t{0});
    }

    // NVFP4's two scales: the tensor scale maps the tensor's amax to 448 * 6, each block's E4M3
    // scale maps its own amax to about 6; a block far smaller than the tensor's amax keeps its
    // precision until its E4M3 scale underflows.
    void nvfp4TwoLevel() {
        std::vector<float> x(6 * 16);
        const float amaxes[6] = {1000.0f, 1.0f, 0.05f, 0.005f, 1.0e-6f, 250.0f};
        std::mt19937_64 rng(3);
        std::uniform_real_distribution<float> u(-1.0f, 1.0f);
        for (int b = 0; b < 6; ++b) {
            for (int i = 0; i < 16; ++i) x[b * 16 + i] = amaxes[b] * u(rng);
            x[b * 16 + 4] = amaxes[b];
        }
        BlockStats stats;
        const BlockQuantised q = quantise_checked(BlockFormat::nvfp4, x, &stats);
        QCOMPARE(q.tensor_scale, 2688.0f / 1000.0f);
        QCOMPARE(decode_e4m3_scale(q.scales[0]), 448.0f);  // the tensor's amax block uses E4M3's top
        const auto back = decoded(q);
        // Blocks 0-2 (block scale a normal E4M3): each block's amax comes back within E4M3's
        // rounding (6.25%), the element being 6 or saturated to it.
        for (int b = 0; b < 3; ++b) {
            const float got = back[b * 16 + 4];
            QVERIFY2(std::fabs(got - amaxes[b]) <= 0.2f * amaxes[b],
                     qPrintable(QString("block %1: amax %2 -> %3").arg(b).arg(amaxes[b]).arg(got)));
            QVERIFY(q.scales[b] != 0);
        }
        // Block 3: 0.005 * 2.688 / 6 = 0.00224 is an E4M3 subnormal (2^-9 steps): coarse, not zero.
        QVERIFY(q.scales[3] != 0 && q.scales[3] < 8);
        QVERIFY(back[3 * 16 + 4] > 0.0025f && back[3 * 16 + 4] < 0.0075f);
        // Block 4: 1e-6 * 2.688 / 6 is below E4M3's smallest subnormal 2^-9: scale 0, all flushed.
        QCOMPARE(int(q.scales[4]), 0);
        for (int i = 0; i < 16; ++i) QCOMPARE_EXACT(back[4 * 16 + i], 0.0f);
        QVERIFY(stats.flushed_to_zero >= 16);
        // An MX format keeps block 4 (its scale is a power of two chosen per block).
        std::vector<float> mx(x.begin() + 64, x.begin() + 80);
        const auto mx_back = decoded(quantise_checked(BlockFormat::mxfp4, mx));
        QVERIFY(mx_back[4] == 1.0e-6f || std::fabs(mx_back[4] - 1.0e-6f) < 0.3e-6f);
    }

    void nvfp4AllZero() {
        std::vector<float> x(40, 0.0f);
        x[17] = -0.0f;
        BlockStats stats;
        const BlockQuantised q = quantise_checked(BlockFormat::nvfp4, x, &stats);
        QCOMPARE(q.tensor_scale, 1.0f);
        QCOMPARE(q.scales, std::vector<std::uint8_t>(3, 0));
        const auto back = decoded(q);
        for (std::size_t i = 0; i < x.size(); ++i) QVERIFY(same(back[i], x[i]));
        QCOMPARE(stats.flushed_to_zero, std::size_t{0});
        QCOMPARE(stats.saturated, std::size_t{0});
        // Tensor scales at the edges of fp32: capped at FLT_MAX for a tiny amax.
        QCOMPARE(nvfp4_tensor_scale(0.0f), 1.0f);
        QCOMPARE(nvfp4_tensor_scale(inf), 1.0f);
        QCOMPARE(nvfp4_tensor_scale(0x1p-149f), fmax32);
        QCOMPARE(nvfp4_tensor_scale(fmax32), 2688.0f / fmax32);
        std::vector<float> tiny(16, 0x1p-149f);
        quantise_checked(BlockFormat::nvfp4, tiny);
        std::vector<float> huge(16, fmax32);
        huge[3] = -fmax32 / 3;
        quantise_checked(BlockFormat::nvfp4, huge);
    }

    // The reference quantiser against the library, bit for bit, on many random blocks.
    void randomAgainstReference_data() { add_block_rows(false); }
    void randomAgainstReference() {
        QFETCH(BlockFormat, format);
        const BlockFormatInfo& info = block_format_info(format);
        std::mt19937_64 rng(1234 + static_cast<int>(format));
        std::uniform_int_distribution<int> blocks(1, 40), extra(0, info.block_size - 1), special(0, 99);
        std::size_t total_blocks = 0, live_scales = 0;
        for (int t = 0; t < 400; ++t) {
            const std::size_t n = static_cast<std::size_t>(blocks(rng) * info.block_size + (t % 2 ? extra(rng) : 0));
            std::vector<float> x;
            if (format == BlockFormat::nvfp4 && t % 3 != 0) {
                const int top = std::uniform_int_distribution<int>(-100, 120)(rng);
                x = random_values(rng, n, info.block_size, info.element, top - 12, top);
            } else {
                x = random_values(rng, n, info.block_size, info.element);
            }
            if (special(rng) < 10) x[static_cast<std::size_t>(special(rng)) % n] = special(rng) < 50 ? qnan : -inf;
            BlockStats stats;
            const BlockQuantised q = quantise_checked(format, x, &stats);
            if (QTest::currentTestFailed()) return;
            total_blocks += stats.blocks;
            for (std::uint8_t sc : q.scales) live_scales += sc != 0 && sc != 0x7F && sc != 0xFF;
        }
        QVERIFY(total_blocks > 4000);
        QVERIFY(live_scales > total_blocks / 3);  // the data reaches past trivial scales
    }

    // dequantise(quantise(x)) == round_blocks(x), bit for bit, out of place and in place.
    void roundBlocksIsQuantiseDequantise_data() { add_block_rows(false); }
    void roundBlocksIsQuantiseDequantise() {
        QFETCH(BlockFormat, format);
        const BlockFormatInfo& info = block_format_info(format);
        std::mt19937_64 rng(99 + static_cast<int>(format));
        for (int t = 0; t < 200; ++t) {
            const std::size_t n = static_cast<std::size_t>(1 + (t * 37) % 700);
            std::vector<float> x = random_values(rng, n, info.block_size, info.element);
            if (t % 17 == 0) x[n / 2] = qnan;
            std::vector<float> want;
            BlockStats qs;
            check_round_blocks(format, x, &want, &qs);
            if (QTest::currentTestFailed()) return;
            std::vector<float> in_place = x;
            round_blocks(format, in_place.data(), in_place.data(), n);
            for (std::size_t i = 0; i < n; ++i) QVERIFY(same(in_place[i], want[i]));
            // Rounding is idempotent when the scales survive: a second pass changes nothing for MX.
            if (format != BlockFormat::nvfp4) {
                std::vector<float> again(n);
                round_blocks(format, want.data(), again.data(), n);
                for (std::size_t i = 0; i < n; ++i) QVERIFY(same(again[i], want[i]));
            }
        }
    }

    // round_blocks (block_round.cpp's fast path) == dequantise(quantise) on the edge blocks: all
    // zeros and signed zeros, an inf, a NaN, subnormal amaxes, FLT_MAX, ties on every element's
    // grid, values just past the element max, and (NVFP4) a block whose scale rounds to zero
    // beside a large one; along rows and along columns, with the same counts.
    void roundBlocksOnEdgeBlocks_data() { add_block_rows(false); }
    void roundBlocksOnEdgeBlocks() {
        QFETCH(BlockFormat, format);
        const BlockFormatInfo& info = block_format_info(format);
        const ElementFormatInfo& el = element_format_info(info.element);
        const std::size_t B = static_cast<std::size_t>(info.block_size);
        std::vector<float> x;
        auto block = [&](auto fill) {
            for (std::size_t i = 0; i < B; ++i) x.push_back(fill(i));
        };
        block([](std::size_t) { return 0.0f; });
        block([](std::size_t i) { return i % 2 ? -0.0f : 0.0f; });
        block([](std::size_t i) { return i == 3 ? inf : 1.0f + static_cast<float>(i); });
        block([](std::size_t i) { return i == 5 ? qnan : -2.0f; });
        block([](std::size_t i) { return std::ldexp(1.0f + static_cast<float>(i) / 8, -140 + static_cast<int>(i % 4)); });
        block([](std::size_t i) { return i == 0 ? std::numeric_limits<float>::max() : std::ldexp(1.0f, static_cast<int>(i) * 4); });
        // Ties: (m + 0.5) steps of the element grid in each binade, with the amax fixing the scale
        // at 2^0 (MX: amax in [2^emax, 2^(emax+1))).
        block([&](std::size_t i) {
            if (i == 0) return std::ldexp(1.0f, el.emax);
            const int e = 1 - el.bias + static_cast<int>(i % static_cast<std::size_t>(el.emax + el.bias));
            return std::ldexp(1.0f + (static_cast<float>(i % 4) + 0.5f) / std::ldexp(1.0f, el.mantissa_bits), e) *
                   (i % 2 ? -1.0f : 1.0f);
        });
        block([&](std::size_t i) { return el.max_finite * (1.0f + static_cast<float>(i) / 64) * (i % 2 ? -1.0f : 1.0f); });
        block([](std::size_t i) { return std::ldexp(1.0f, -30) * static_cast<float>(i); });  // NVFP4: scale rounds to 0
        std::vector<float> want;
        BlockStats qs;
        check_round_blocks(format, x, &want, &qs);
        if (QTest::currentTestFailed()) return;
        // The blocks reach what they are for (NVFP4's scale maps each block's amax to about 6:
        // nothing saturates there).
        QVERIFY(qs.nan_blocks == 2 && qs.flushed_to_zero > 0);
        if (format != BlockFormat::nvfp4) QVERIFY(qs.saturated > 0);
        // The same blocks as the columns of a (B, blocks) matrix: the tiled path.
        const std::size_t blocks = x.size() / B;
        std::vector<float> columns(x.size()), back(x.size());
        for (std::size_t b = 0; b < blocks; ++b)
            for (std::size_t k = 0; k < B; ++k) columns[k * blocks + b] = x[b * B + k];
        const BlockStats cs = round_blocks_along(format, columns.data(), columns.data(), 1, B, blocks);
        for (std::size_t b = 0; b < blocks; ++b)
            for (std::size_t k = 0; k < B; ++k) back[b * B + k] = columns[k * blocks + b];
        for (std::size_t i = 0; i < x.size(); ++i)
            QVERIFY2(same(back[i], want[i]) || (std::isnan(back[i]) && std::isnan(want[i])),
                     qPrintable(QString("column value %1 = %2: %3, want %4").arg(i).arg(show(x[i])).arg(show(back[i])).arg(show(want[i]))));
        QCOMPARE(cs.flushed_to_zero, qs.flushed_to_zero);
        QCOMPARE(cs.saturated, qs.saturated);
        QCOMPARE(cs.nan_blocks, qs.nan_blocks);
    }

    // round_blocks_along == each run of K values (at stride inner) gathered, padded with zeros to
    // whole blocks, rounded by one round_blocks call over all runs (so NVFP4's tensor scale is the
    // whole tensor's), scattered back; out of place and in place, with the stats of that call
    // less the padding.
    void roundBlocksAlongIsRoundBlocksPerRun_data() { add_block_rows(false); }
    void roundBlocksAlongIsRoundBlocksPerRun() {
        QFETCH(BlockFormat, format);
        const BlockFormatInfo& info = block_format_info(format);
        const std::size_t B = static_cast<std::size_t>(info.block_size);
        std::mt19937_64 rng(7 + static_cast<int>(format));
        // Also many runs with a partial block each (a convolution's patch of 9, a layer of 40
        // outputs): more runs than block_round.cpp pads at a time; and tiles of 37 columns, two
        // groups of sixteen columns' parameters in lanes and five alone.
        const std::size_t shapes[][3] = {{1, 1, 1}, {3, 70, 1}, {1, 70, 5}, {2, 33, 7}, {4, 16, 3}, {1, 5, 40},
                                         {150, 9, 1}, {70, 40, 1}, {2, 40, 37}};
        for (const auto& shape : shapes) {
            const std::size_t outer = shape[0], K = shape[1], inner = shape[2], n = outer * K * inner;
            std::vector<float> x = random_values(rng, n, info.block_size, info.element);
            for (std::size_t i = 0; i < n; ++i) x[i] *= std::ldexp(1.0f, static_cast<int>(i % 11) - 5);
            const std::size_t padded = (K + B - 1) / B * B;
            std::vector<float> runs(outer * inner * padded, 0.0f);
            for (std::size_t o = 0; o < outer; ++o)
                for (std::size_t i = 0; i < inner; ++i)
                    for (std::size_t k = 0; k < K; ++k) runs[(o * inner + i) * padded + k] = x[(o * K + k) * inner + i];
            BlockStats want_stats = round_blocks(format, runs.data(), runs.data(), runs.size());
            want_stats.values = n;  // the padding is no value of the tensor
            std::vector<float> got(n), in_place = x;
            const BlockStats stats = round_blocks_along(format, x.data(), got.data(), outer, K, inner);
            round_blocks_along(format, in_place.data(), in_place.data(), outer, K, inner);
            for (std::size_t o = 0; o < outer; ++o)
                for (std::size_t i = 0; i < inner; ++i)
                    for (std::size_t k = 0; k < K; ++k) {
                        const std::size_t at = (o * K + k) * inner + i;
                        const float want = runs[(o * inner + i) * padded + k];
                        if (!same(got[at], want) || !same(in_place[at], want))
                            QFAIL(qPrintable(QString("(%1, %2, %3) of (%4, %5, %6): %7, want %8")
                                                 .arg(o).arg(k).arg(i).arg(outer).arg(K).arg(inner)
                                                 .arg(show(got[at])).arg(show(want))));
                    }
            QCOMPARE(stats.blocks, want_stats.blocks);
            QCOMPARE(stats.values, want_stats.values);
            QCOMPARE(stats.flushed_to_zero, want_stats.flushed_to_zero);
            QCOMPARE(stats.saturated, want_stats.saturated);
        }
    }

    // round_block_operand: round_blocks_along's codes (quantise_block's, with the whole tensor's
    // NVFP4 scale), each value an element times its block's scale alone; the factor returned is
    // fp32(1 / S) for NVFP4 and 1 for MX; NVFP4's values are bf16 values. Stochastically: the
    // elements of round_blocks_along_stochastic with the same key, decoded the same way.
    void roundBlockOperandDecodesWithBlockScalesAlone_data() { add_block_rows(false); }
    void roundBlockOperandDecodesWithBlockScalesAlone() {
        QFETCH(BlockFormat, format);
        const BlockFormatInfo& info = block_format_info(format);
        const std::size_t B = static_cast<std::size_t>(info.block_size);
        const bool nvfp4 = format == BlockFormat::nvfp4;
        std::mt19937_64 rng(31 + static_cast<int>(format));
        const std::size_t shapes[][3] = {{3, 70, 1}, {1, 70, 5}, {2, 33, 7}, {4, 64, 3}, {150, 9, 1}, {70, 40, 1}};
        std::size_t live_blocks = 0, inexact_full = 0;
        for (const auto& shape : shapes) {
            const std::size_t outer = shape[0], K = shape[1], inner = shape[2], n = outer * K * inner;
            std::vector<float> x = nvfp4 ? random_values(rng, n, info.block_size, info.element, -12, 0)
                                         : random_values(rng, n, info.block_size, info.element);
            x[n / 2] = qnan;  // a NaN block
            const float S = block_tensor_scale(format, x.data(), n);
            std::vector<float> got(n), in_place = x, full(n), sr(n), sr_full(n);
            const float factor = round_block_operand(format, x.data(), got.data(), outer, K, inner, S);
            round_block_operand(format, in_place.data(), in_place.data(), outer, K, inner, S);
            round_blocks_along(format, x.data(), full.data(), outer, K, inner);
            round_block_operand(format, x.data(), sr.data(), outer, K, inner, S, 99);
            round_blocks_along_stochastic(format, x.data(), sr_full.data(), outer, K, inner, S, 99);
            QVERIFY(same(factor, nvfp4 ? 1.0f / S : 1.0f));
            QVERIFY(same(factor, block_operand_factor(format, S)));
            std::vector<float> run(K);
            std::vector<std::uint8_t> codes(B);
            for (std::size_t o = 0; o < outer; ++o)
                for (std::size_t i = 0; i < inner; ++i) {
                    for (std::size_t k = 0; k < K; ++k) run[k] = x[(o * K + k) * inner + i];
                    for (std::size_t first = 0; first < K; first += B) {
                        const std::size_t count = std::min(B, K - first);
                        const std::uint8_t scale = quantise_block(format, S, run.data() + first, count, codes.data());
                        // The block's scale alone: E4M3's value for NVFP4 (the tensor scale 1), 2^e for MX.
                        const float block_scale = block_decode_factor(format, scale, 1.0f);
                        const float decode_full = block_decode_factor(format, scale, S);
                        live_blocks += std::isfinite(block_scale) && block_scale != 0;
                        for (std::size_t j = 0; j < count; ++j) {
                            const std::size_t at = (o * K + first + j) * inner + i;
                            const float want = decode_element(info.element, codes[j]) * block_scale;
                            if (!same(got[at], want) || !same(in_place[at], want))
                                QFAIL(qPrintable(QString("(%1, %2, %3) of (%4, %5, %6) = %7: %8, want %9")
                                                     .arg(o).arg(first + j).arg(i).arg(outer).arg(K).arg(inner)
                                                     .arg(show(x[at])).arg(show(got[at])).arg(show(want))));
                            if (!nvfp4) QVERIFY(same(got[at], full[at]) && same(sr[at], sr_full[at]));
                            if (nvfp4 && std::isfinite(want))
                                QCOMPARE(std::bit_cast<std::uint32_t>(want) & 0xFFFFu, 0u);  // a bf16 value
                            if (!nvfp4 || !std::isfinite(block_scale) || block_scale == 0) continue;
                            // The stochastic element (NVFP4 keeps its scale when it rounds
                            // stochastically; MX may not, and is compared whole above): sr / s is
                            // exact, sr being an element times s.
                            const float element = sr[at] / block_scale;
                            QVERIFY(same(element * block_scale, sr[at]));
                            QVERIFY2(same(element * decode_full, sr_full[at]),
                                     qPrintable(show(sr[at]) + " vs " + show(sr_full[at])));
                            inexact_full += nvfp4 && !same(got[at] * factor, full[at]);
                        }
                    }
                }
        }
        QVERIFY(live_blocks > 100);
        // Decoding with fp32(s · 1/S) (round_blocks_along) and multiplying the exact s-scaled value
        // by 1/S differ in the last bit now and then: the difference a GEMM's alpha makes.
        if (nvfp4) qInfo("NVFP4 values where (element · s) · (1/S) differs from element · fp32(s · (1/S)): %zu",
                         inexact_full);
    }

    // round_block_operand's kept exponents (the block-scale views read them): each block's
    // block_decode_exponents value with the same tensor scale, found by the rounding's own pass,
    // along rows with whole and partial blocks, to nearest and stochastically; zero blocks, NaN
    // and inf blocks, blocks of subnormals, and (NVFP4) blocks whose scale rounds to zero among
    // them. Keeping them changes no value; they are kept along rows only.
    void roundBlockOperandKeepsTheViewsExponents_data() { add_block_rows(false); }
    void roundBlockOperandKeepsTheViewsExponents() {
        QFETCH(BlockFormat, format);
        const BlockFormatInfo& info = block_format_info(format);
        const std::size_t B = static_cast<std::size_t>(info.block_size);
        const bool nvfp4 = format == BlockFormat::nvfp4;
        std::mt19937_64 rng(57 + static_cast<int>(format));
        const std::size_t shapes[][2] = {{3, 70}, {150, 9}, {70, 64}, {5, 32}, {33, 16}, {2, 200}};
        std::size_t sentinels = 0, zero_blocks = 0;
        for (const auto& shape : shapes) {
            const std::size_t rows = shape[0], K = shape[1], n = rows * K, per_row = (K + B - 1) / B;
            std::vector<float> x = nvfp4 ? random_values(rng, n, info.block_size, info.element, -12, 0)
                                         : random_values(rng, n, info.block_size, info.element);
            std::fill_n(x.begin(), std::min<std::size_t>(B, K), 0.0f);  // row 0's first block: zeros
            x[n / 2] = qnan;
            x[n - 1] = -std::numeric_limits<float>::infinity();
            if (rows > 2) {  // row 1's first block: subnormals (NVFP4: a scale that rounds to zero)
                for (std::size_t j = 0; j < std::min<std::size_t>(B, K); ++j)
                    x[K + j] = j % 3 == 0 ? 0.0f : std::ldexp(1.0f, -140 + static_cast<int>(j % 7));
            }
            const float S = block_tensor_scale(format, x.data(), n);
            for (const bool stochastic : {false, true}) {
                const std::optional<std::uint64_t> key = stochastic ? std::optional<std::uint64_t>(7) : std::nullopt;
                std::vector<std::int16_t> kept(rows * per_row, 12345), want(rows * per_row);
                std::vector<float> with(n), without(n), in_place = x;
                round_block_operand(format, x.data(), with.data(), rows, K, 1, S, key, kept.data());
                round_block_operand(format, x.data(), without.data(), rows, K, 1, S, key);
                std::vector<std::int16_t> kept_in_place(rows * per_row);
                round_block_operand(format, in_place.data(), in_place.data(), rows, K, 1, S, key, kept_in_place.data());
                block_decode_exponents(format, S, x.data(), rows, K, want.data(), stochastic);
                for (std::size_t i = 0; i < n; ++i)
                    QVERIFY(same(with[i], without[i]) && same(in_place[i], without[i]));
                for (std::size_t b = 0; b < want.size(); ++b) {
                    if (kept[b] != want[b] || kept_in_place[b] != want[b])
                        QFAIL(qPrintable(QString("(%1 x %2) block %3%4: kept %5, want %6")
                                             .arg(rows).arg(K).arg(b).arg(stochastic ? " (stochastic)" : "")
                                             .arg(kept[b]).arg(want[b])));
                    sentinels += want[b] == block_exponent_nan || want[b] == block_exponent_zero;
                    zero_blocks += want[b] == block_exponent_zero;
                }
            }
        }
        QVERIFY(sentinels > 0 && zero_blocks > 0);
        std::vector<float> x(64, 1.0f), y(64);
        std::int16_t e[8];
        QVERIFY_THROWS_EXCEPTION(Error, round_block_operand(format, x.data(), y.data(), 1, 32, 2, 1.0f, {}, e));
    }

    // round_block_operand's largest magnitude (the what-if's amax of x, taken by the forward's
    // quantiser): the largest |x| bit pattern, NaN above inf above every finite value, whatever
    // the path: rows to nearest (from the blocks' own amaxes, whole and zero-padded partial blocks
    // alike), stochastic rows and column tiles (a pass of its own), in place or not; asking for it
    // changes no value.
    void roundBlockOperandFindsTheLargestMagnitude_data() { add_block_rows(false); }
    void roundBlockOperandFindsTheLargestMagnitude() {
        QFETCH(BlockFormat, format);
        const BlockFormatInfo& info = block_format_info(format);
        std::mt19937_64 rng(83 + static_cast<int>(format));
        const std::size_t shapes[][3] = {{3, 70, 1}, {150, 9, 1}, {70, 64, 1}, {1, 1000, 1}, {2, 33, 7}, {4, 64, 3}};
        const float nan_payload = std::bit_cast<float>(0x7FC01234u);
        for (const auto& shape : shapes) {
            const std::size_t outer = shape[0], K = shape[1], inner = shape[2], n = outer * K * inner;
            for (const int special : {0, 1, 2, 3}) {  // none, an inf, a NaN, an inf and a negative NaN
                std::vector<float> x = random_values(rng, n, info.block_size, info.element);
                // The largest finite value in the last (partial where K leaves one) block.
                x[n - 1] = 3.0e5f;
                if (special == 1 || special == 3) x[n / 3] = -std::numeric_limits<float>::infinity();
                if (special == 2) x[n / 2] = nan_payload;
                if (special == 3) x[n / 2] = -nan_payload;
                std::uint32_t want = 0;
                for (float v : x) want = std::max(want, std::bit_cast<std::uint32_t>(v) & 0x7FFFFFFFu);
                const float S = block_tensor_scale(format, x.data(), n);
                for (const bool stochastic : {false, true}) {
                    const std::optional<std::uint64_t> key = stochastic ? std::optional<std::uint64_t>(5) : std::nullopt;
                    std::vector<float> with(n), without(n), in_place = x;
                    float largest = -1.0f, largest_in_place = -1.0f;
                    round_block_operand(format, x.data(), with.data(), outer, K, inner, S, key, nullptr, &largest);
                    round_block_operand(format, x.data(), without.data(), outer, K, inner, S, key);
                    round_block_operand(format, in_place.data(), in_place.data(), outer, K, inner, S, key, nullptr,
                                        &largest_in_place);
                    const QString where = QString("(%1, %2, %3), case %4%5").arg(outer).arg(K).arg(inner).arg(special)
                                              .arg(stochastic ? ", stochastic" : "");
                    QVERIFY2(std::bit_cast<std::uint32_t>(largest) == want &&
                                 std::bit_cast<std::uint32_t>(largest_in_place) == want,
                             qPrintable(where + ": " + show(largest) + ", want " + show(std::bit_cast<float>(want))));
                    for (std::size_t i = 0; i < n; ++i)
                        QVERIFY2(same(with[i], without[i]) && same(in_place[i], without[i]), qPrintable(where));
                }
            }
        }
    }

    void dequantiseRefusesBrokenArrays() {
        BlockQuantised q;
        std::vector<float> x(40, 1.0f), out(40);
        quantise_blocks(BlockFormat::mxfp4, x.data(), x.size(), q);
        q.scales.pop_back();
        QVERIFY_THROWS_EXCEPTION(Error, dequantise_blocks(q, out.data()));
        std::uint8_t codes[40];
        QVERIFY_THROWS_EXCEPTION(Error, quantise_block(BlockFormat::nvfp4, 1.0f, x.data(), 17, codes));
        QVERIFY_THROWS_EXCEPTION(Error, quantise_block(BlockFormat::mxfp4, 1.0f, x.data(), 0, codes));
    }

    // ---- describe_block

    void describeMx() {
        // amax 7: floor(log2 7) = 2 = emax of e2m1, so the scale is 2^0 (code 127, 0x7f).
        const std::vector<float> x = {1.0f, -2.5f, 5.0f, 0.2f, 0.0f, 7.0f};
        const BlockDescription d = describe_block(BlockFormat::mxfp4, x.data(), x.size());
        QCOMPARE(d.block_size, 32);
        QCOMPARE(d.amax, 7.0f);
        QCOMPARE(int(d.scale_code), 127);
        QCOMPARE(d.scale_hex, std::string("0x7f"));
        QCOMPARE(d.scale_bits, std::string("01111111"));
        QCOMPARE(d.scale_exponent, 0);
        QCOMPARE(d.scale_value, 1.0f);
        QCOMPARE(d.decode_factor, 1.0f);
        QCOMPARE(d.tensor_scale, 1.0f);
        QVERIFY(!d.nan_block);
        QCOMPARE(d.elements.size(), x.size());
        // -2.5 is a tie between 2 (code 4, even) and 3 (code 5): 2.
        const DescribedElement& e = d.elements[1];
        QCOMPARE(int(e.code), 0x8 | 0x4);
        QCOMPARE(e.hex, std::string("0x0c"));
        QCOMPARE(e.sign_bits, std::string("1"));
        QCOMPARE(e.exponent_bits, std::string("10"));
        QCOMPARE(e.mantissa_bits, std::string("0"));
        QCOMPARE(e.element_value, -2.0f);
        QCOMPARE(e.value, -2.0f);
        QCOMPARE(e.abs_error, 0.5);
        QCOMPARE(e.rel_error, 0.2);
        QVERIFY(d.elements[3].flushed_to_zero);  // 0.2 < 0.25: zero
        QVERIFY(d.elements[5].saturated);        // 7 > 6: clamped to 6
        QCOMPARE(d.elements[5].value, 6.0f);
        QVERIFY(!d.elements[2].saturated);       // 5 is a tie between 4 and 6: 4 (even)
        QCOMPARE(d.elements[2].value, 4.0f);
        // The values are what round_blocks stores, and the flags add up to the stats.
        std::vector<float> r(x.size());
        round_blocks(BlockFormat::mxfp4, x.data(), r.data(), x.size());
        std::size_t sat = 0, flushed = 0;
        for (std::size_t i = 0; i < x.size(); ++i) {
            QVERIFY(same(d.elements[i].value, r[i]));
            sat += d.elements[i].saturated;
            flushed += d.elements[i].flushed_to_zero;
        }
        QCOMPARE(sat, d.stats.saturated);
        QCOMPARE(flushed, d.stats.flushed_to_zero);

        const float nan_block[] = {1.0f, qnan};
        const BlockDescription n = describe_block(BlockFormat::mxfp8_e4m3, nan_block, 2);
        QVERIFY(n.nan_block);
        QCOMPARE(n.scale_hex, std::string("0xff"));
        QVERIFY(std::isnan(n.elements[0].value));
        QVERIFY(std::isnan(n.elements[0].abs_error));

        std::vector<float> too_many(33, 1.0f);
        QVERIFY_THROWS_EXCEPTION(Error, describe_block(BlockFormat::mxfp4, too_many.data(), too_many.size()));
        QVERIFY_THROWS_EXCEPTION(Error, describe_block(BlockFormat::mxfp4, too_many.data(), 0));
    }

    void describeNvfp4() {
        const std::vector<float> x = {0.1f, -0.3f, 0.05f, 0.7f};
        // Alone, the block is the tensor: its amax maps to 448 * 6.
        const BlockDescription alone = describe_block(BlockFormat::nvfp4, x.data(), x.size());
        QCOMPARE(alone.tensor_scale, 2688.0f / 0.7f);
        QCOMPARE(alone.scale_value, 448.0f);
        QCOMPARE(alone.scale_exponent, 8);
        QCOMPARE(alone.decode_factor, block_decode_factor(BlockFormat::nvfp4, alone.scale_code, alone.tensor_scale));
        // As part of a tensor whose amax is 100.
        const BlockDescription part = describe_block(BlockFormat::nvfp4, x.data(), x.size(), 100.0f);
        QCOMPARE(part.tensor_scale, 26.88f);
        BlockQuantised q;
        std::vector<float> tensor = x;
        tensor.resize(16, 0.0f);
        tensor.push_back(100.0f);
        quantise_blocks(BlockFormat::nvfp4, tensor.data(), tensor.size(), q);
        QCOMPARE(part.scale_code, q.scales[0]);
        for (std::size_t i = 0; i < x.size(); ++i) QCOMPARE(part.elements[i].code, q.elements[i]);
        QVERIFY_THROWS_EXCEPTION(Error, describe_block(BlockFormat::nvfp4, x.data(), x.size(), 0.5f));
        QVERIFY_THROWS_EXCEPTION(Error, describe_block(BlockFormat::nvfp4, x.data(), x.size(), inf));
    }
};

QTEST_APPLESS_MAIN(TestBlockFormats)
#include "test_block_formats.moc"
