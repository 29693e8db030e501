// Shared by the op suites that hold an op against a reference written in double (test_cpu_conv,
// test_cpu_pool, test_cpu_batchnorm_add, test_cpu_attention, test_cpu_layernorm_embedding,
// test_backend_checks): tensors made in one line, values rounded to a format, a check that values
// are values of a format, a format's unit roundoff, central finite differences in double of a
// reference function (the independent check of every backward), and the first value off its
// reference.
#pragma once

#include <QString>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <vector>

#include "backend/backend.h"
#include "numeric/convert.h"

namespace conv_test {

inline std::unique_ptr<mantissa::Tensor> make(mantissa::Backend& b, std::int64_t rows, std::int64_t cols,
                                              mantissa::Format f, const char* name = "t") {
    return b.allocate(mantissa::TensorDesc{name, rows, cols, f, mantissa::MemoryCategory::workspace});
}

inline std::unique_ptr<mantissa::Tensor> make_with(mantissa::Backend& b, std::int64_t rows, std::int64_t cols,
                                                   mantissa::Format f, const std::vector<float>& values,
                                                   const char* name = "t") {
    auto t = make(b, rows, cols, f, name);
    b.upload(*t, values.data(), static_cast<std::int64_t>(values.size()));
    return t;
}

// The unit roundoff of a format: the largest relative error of one rounding (normal range).
inline double unit_roundoff(mantissa::Format f) {
    return std::ldexp(1.0, -(mantissa::format_info(f).mantissa_bits + 1));
}

inline std::vector<float> rounded(mantissa::Format f, std::vector<float> v) {
    for (float& x : v) x = mantissa::round_to(f, x);
    return v;
}

inline bool all_in_format(mantissa::Format f, const std::vector<float>& v) {
    for (float x : v)
        if (!(mantissa::round_to(f, x) == x || (std::isnan(x) && std::isnan(mantissa::round_to(f, x))))) return false;
    return true;
}

inline std::vector<double> to_double(const std::vector<float>& v) { return {v.begin(), v.end()}; }

inline double dot(const std::vector<double>& a, const std::vector<double>& b) {
    double s = 0;
    for (std::size_t i = 0; i < a.size(); ++i) s += a[i] * b[i];
    return s;
}

// ∂loss/∂v_j = (loss(v + h·e_j) - loss(v - h·e_j)) / 2h for every j, in double.
inline std::vector<double> finite_differences(std::vector<double> v,
                                              const std::function<double(const std::vector<double>&)>& loss,
                                              double h) {
    std::vector<double> g(v.size());
    for (std::size_t j = 0; j < v.size(); ++j) {
        const double keep = v[j];
        v[j] = keep + h;
        const double up = loss(v);
        v[j] = keep - h;
        const double down = loss(v);
        v[j] = keep;
        g[j] = (up - down) / (2 * h);
    }
    return g;
}

// The first index where got and want differ by more than tol·(1 + |want|), or -1.
inline std::int64_t first_mismatch(const std::vector<float>& got, const std::vector<double>& want, double tol) {
    for (std::size_t i = 0; i < want.size(); ++i)
        if (!(std::abs(static_cast<double>(got[i]) - want[i]) <= tol * (1 + std::abs(want[i]))))
            return static_cast<std::int64_t>(i);
    return -1;
}

// "what[i] = got, reference want", or empty when i < 0.
inline QString mismatch_at(const char* what, const std::vector<float>& got, const std::vector<double>& want,
                           std::int64_t i) {
    if (i < 0) return {};
    const auto at = static_cast<std::size_t>(i);
    return QString("%1[%2] = %3, reference %4").arg(what).arg(i).arg(got[at], 0, 'g', 9).arg(want[at], 0, 'g', 9);
}

// The first value whose bits differ between a pass that rounds in the registers and the two
// passes it replaces, as a sentence naming it, or empty (NaNs compare by their bits).
inline QString first_bit_difference(const char* what, const std::vector<float>& in_registers,
                                    const std::vector<float>& two_passes) {
    if (in_registers.size() != two_passes.size()) return QString("%1: sizes differ").arg(what);
    for (std::size_t i = 0; i < two_passes.size(); ++i)
        if (std::memcmp(&in_registers[i], &two_passes[i], sizeof(float)) != 0)
            return QString("%1[%2]: %3 in the registers, %4 in two passes")
                .arg(what).arg(i).arg(in_registers[i]).arg(two_passes[i]);
    return {};
}

// The first value where |got − want| > rel·|want| + abs, as mismatch_at says it, or empty.
inline QString mismatch(const char* what, const std::vector<float>& got, const std::vector<double>& want, double rel,
                        double abs) {
    for (std::size_t i = 0; i < want.size(); ++i)
        if (!(std::abs(got[i] - want[i]) <= rel * std::abs(want[i]) + abs))
            return mismatch_at(what, got, want, static_cast<std::int64_t>(i));
    return {};
}

// The same with first_mismatch's bound, tol·(1 + |want|).
inline QString mismatch(const char* what, const std::vector<float>& got, const std::vector<double>& want, double tol) {
    return mismatch_at(what, got, want, first_mismatch(got, want, tol));
}

}  // namespace conv_test
