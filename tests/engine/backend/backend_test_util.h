// Shared by the engine/backend suites: a tensor's values read back, reproducible normal random
// values, and the tensors of one FP8 linear layer.
#pragma once

#include <cstdint>
#include <memory>
#include <random>
#include <vector>

#include "backend/backend.h"

namespace backend_test {

inline std::vector<float> read(mantissa::Backend& b, const mantissa::Tensor& t) {
    std::vector<float> v(static_cast<std::size_t>(t.numel()));
    b.download(t, v.data(), t.numel());
    return v;
}

// n values of normal(0, scale), the same for the same seed.
inline std::vector<float> random_values(std::size_t n, float scale, unsigned seed) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> d(0.0f, scale);
    std::vector<float> v(n);
    for (float& x : v) x = d(rng);
    return v;
}

// One FP8 linear layer's own tensors on a backend: FP32 weight, bias and their gradients, the
// e4m3 weight copy and saved input, and the scaling state, named by `t` as linear_forward and
// linear_backward take them. The caller keeps x, y and the gradients of the activations.
struct Fp8Linear {
    std::unique_ptr<mantissa::Tensor> w, b, wq, gw, gb, xs;
    std::unique_ptr<mantissa::Fp8State> state;
    mantissa::LinearTensors t;

    Fp8Linear(mantissa::Backend& be, std::int64_t batch, std::int64_t in, std::int64_t out, int history_len) {
        using namespace mantissa;
        auto mk = [&](std::int64_t r, std::int64_t c, Format f) {
            return be.allocate(TensorDesc{"t", r, c, f, MemoryCategory::workspace});
        };
        w = mk(out, in, Format::fp32), b = mk(1, out, Format::fp32), wq = mk(out, in, Format::fp8_e4m3);
        gw = mk(out, in, Format::fp32), gb = mk(1, out, Format::fp32), xs = mk(batch, in, Format::fp8_e4m3);
        state = be.create_fp8_state(Fp8Recipe{history_len, 0, AmaxAlgo::max});
        t.compute = Format::fp8_e4m3;
        t.weight = w.get();
        t.weight_compute = wq.get();
        t.bias = b.get();
        t.grad_weight = gw.get();
        t.grad_bias = gb.get();
        t.saved_input = xs.get();
        t.fp8 = state.get();
    }
};

}  // namespace backend_test
