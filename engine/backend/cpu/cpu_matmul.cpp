// CpuMatmul on oneDNN (2.x and 3.x APIs): a cache of matmul primitives keyed by shape.
#include "backend/cpu/cpu_matmul.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include <omp.h>
#include <oneapi/dnnl/dnnl.hpp>

#include "backend/cpu/cpu_bf16_copy.h"
#include "backend/cpu/onednn_matmul.h"
#include "error.h"
#include "printable_text.h"

namespace mantissa {

namespace {

using dt = dnnl::memory::data_type;
using tag = dnnl::memory::format_tag;

// The most threads the CPU backend takes: backend.threads' range (engine/config/experiment.cpp),
// which MANTISSA_CPU_THREADS and OMP_NUM_THREADS are held to as well.
constexpr int most_threads = 1024;

struct Key {
    std::int64_t m, n, k;
    bool trans_a, trans_b, bf16;
    int threads;  // asked for (threads_for); the primitive may take fewer (make_onednn_matmul)
    auto tie() const { return std::tie(m, n, k, trans_a, trans_b, bf16, threads); }
    bool operator<(const Key& o) const { return tie() < o.tie(); }
};

}  // namespace

int CpuMatmul::threads_for(std::int64_t multiply_adds, int max_threads) {
    const std::int64_t by_work = multiply_adds / min_work_per_thread;
    return static_cast<int>(std::clamp<std::int64_t>(by_work, 1, std::max(1, max_threads)));
}

int CpuMatmul::default_threads(int spare) {
    // Read as --threads and backend.threads are: a whole number from 1 to most_threads, or 0 (or
    // nothing) for what it would be unset; anything else is refused, never passed over.
    if (const char* env = std::getenv("MANTISSA_CPU_THREADS"); env && *env) {
        const std::string text = env;
        const bool digits =
            text.size() <= 9 && std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; });
        const int n = digits ? std::stoi(text) : -1;
        if (n < 0 || n > most_threads)
            throw Error("MANTISSA_CPU_THREADS is \"" + printable_text(shortened_text(text)) +
                        "\", but it takes the CPU backend's threads, a whole number from 1 to " +
                        std::to_string(most_threads) + " (0: as if unset); set it to one, or unset it.");
        if (n >= 1) return n;
    }
    if (std::getenv("OMP_NUM_THREADS")) {
        const int n = omp_get_max_threads();  // libgomp's reading of it (it warns of one it cannot read)
        if (n > most_threads)
            throw Error("OMP_NUM_THREADS asks for " + std::to_string(n) + " threads, more than the CPU backend's " +
                        std::to_string(most_threads) + "; set it to " + std::to_string(most_threads) +
                        " or fewer, or set MANTISSA_CPU_THREADS.");
        return std::max(1, n);
    }
    const int hardware = static_cast<int>(std::thread::hardware_concurrency());
    return std::max(1, hardware - std::max(0, spare));
}

struct CpuMatmul::Impl {
    dnnl::engine engine{dnnl::engine::kind::cpu, 0};
    dnnl::stream stream{engine};
    std::map<Key, OneDnnMatmul> cache;
    bool bf16 = false;
    int threads = 1;
    std::vector<std::uint16_t> a16, b16;  // bf16 operand copies, grown as needed
    const float* a16_source = nullptr;     // what a16 holds: the previous call's A, else nothing
    std::int64_t a16_count = 0;
    bool a16_exact = false;                // whether a16 holds that A exactly (to_bf16_exact)
    std::int64_t operand_copies = 0;       // bf16_operand_copies()

    OneDnnMatmul& entry(const Key& key) {
        auto it = cache.find(key);
        if (it != cache.end()) return it->second;
        const dt type = key.bf16 ? dt::bf16 : dt::f32;
        const dnnl::memory::desc a_md({key.m, key.k}, type, key.trans_a ? tag::ba : tag::ab);
        const dnnl::memory::desc b_md({key.k, key.n}, type, key.trans_b ? tag::ba : tag::ab);
        const dnnl::memory::desc c_md({key.m, key.n}, dt::f32, tag::ab);
        try {
            return cache.emplace(key, make_onednn_matmul(engine, a_md, b_md, c_md, key.threads)).first->second;
        } catch (const dnnl::error& err) {
            throw Error(std::string("oneDNN could not create a ") + (key.bf16 ? "bf16" : "fp32") +
                        " matmul of shape (" + std::to_string(key.m) + " x " +
                        std::to_string(key.k) + ") x (" + std::to_string(key.k) + " x " +
                        std::to_string(key.n) + "): " + err.what());
        }
    }

    // CpuMatmul::multiply with m, n, k > 0.
    void multiply(const float* a, bool trans_a, const float* b, bool trans_b, float* c, std::int64_t m,
                  std::int64_t n, std::int64_t k, bool bf16_operands, bool a_unchanged, KeptBf16Bits kept) {
        const bool a16_holds_a = a_unchanged && a16_source == a && a16_count == m * k;
        a16_source = nullptr;
        bool use_bf16 = bf16_operands && bf16;
        const int t = threads_for(m * n * k, threads);
        OneDnnMatmul* e;
        try {
            e = &entry({m, n, k, trans_a, trans_b, use_bf16, t});
        } catch (const Error&) {
            if (!use_bf16) throw;
            // This oneDNN has no bf16 matmul for this shape: the FP32 primitive gives the same products.
            bf16 = use_bf16 = false;
            e = &entry({m, n, k, trans_a, trans_b, false, t});
        }
        if (use_bf16) {
            const std::uint16_t* a_bits = kept.a;
            bool exact = true;
            if (!a_bits) {
                if (a16.size() < static_cast<std::size_t>(m * k)) a16.resize(static_cast<std::size_t>(m * k));
                if (!a16_holds_a) {
                    a16_exact = to_bf16_exact_shared(a, a16.data(), m * k, threads);
                    ++operand_copies;
                }
                a16_source = a;
                a16_count = m * k;
                a_bits = a16.data();
                exact = a16_exact;
            }
            const std::uint16_t* b_bits = kept.b;
            if (exact && !b_bits) {
                if (b16.size() < static_cast<std::size_t>(k * n)) b16.resize(static_cast<std::size_t>(k * n));
                exact = to_bf16_exact_shared(b, b16.data(), k * n, threads);
                b_bits = b16.data();
                ++operand_copies;
            }
            if (exact) {
                run_onednn_matmul(*e, stream, a_bits, b_bits, c);
                return;
            }
            // A value the bf16 primitive would not multiply exactly: the FP32 one, same products.
            e = &entry({m, n, k, trans_a, trans_b, false, t});
        }
        run_onednn_matmul(*e, stream, a, b, c);
    }
};

bool CpuMatmul::bf16_available() {
    static const bool available = [] {
        try {
            const dnnl::engine engine(dnnl::engine::kind::cpu, 0);
            const dnnl::memory::desc x({16, 16}, dt::bf16, tag::ab), y({16, 16}, dt::f32, tag::ab);
            make_onednn_matmul(engine, x, x, y);
            return true;
        } catch (const dnnl::error&) {
            return false;
        }
    }();
    return available;
}

const Bf16MatmulChoice& CpuMatmul::measured_bf16_choice() {
    // A 256x512x512 product of plain layouts on one thread (the ratio of the two paths per core,
    // whatever the thread setting, so the choice does not depend on it): about the shape of a
    // small model's layers, large enough that the kernel, not the call, is timed. The calling
    // thread's OpenMP thread count is put back afterwards.
    static const Bf16MatmulChoice choice = [] {
        if (!bf16_available()) {
            Bf16MatmulChoice none;
            none.why = "oneDNN has no bf16 matmul on this CPU";
            return none;
        }
        constexpr std::int64_t m = 256, n = 512, k = 512;
        std::vector<float> a(static_cast<std::size_t>(m * k)), b(static_cast<std::size_t>(k * n)),
            c(static_cast<std::size_t>(m * n));
        for (std::size_t i = 0; i < a.size(); ++i) a[i] = static_cast<float>(static_cast<int>(i % 17) - 8) * 0.125f;
        for (std::size_t i = 0; i < b.size(); ++i) b[i] = static_cast<float>(static_cast<int>(i % 13) - 6) * 0.0625f;
        const int omp_threads = omp_get_max_threads();
        Impl probe;  // its own primitives, one thread
        Bf16MatmulChoice measured = measure_bf16_matmul([&](bool bf16) {
            probe.bf16 = bf16;
            probe.multiply(a.data(), false, b.data(), false, c.data(), m, n, k, true, false, {});
            return probe.bf16 == bf16;
        });
        omp_set_num_threads(omp_threads);
        return measured;
    }();
    return choice;
}

CpuMatmul::CpuMatmul() : m_impl(std::make_unique<Impl>()) {
    // The maker sets the count (make_backend): where it comes from the environment, that reading
    // refuses a bad MANTISSA_CPU_THREADS; here, before it, such a value only means every thread.
    try {
        m_impl->threads = default_threads();
    } catch (const Error&) {
        m_impl->threads = std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
    }
    if (const char* env = std::getenv("MANTISSA_CPU_BF16_MATMUL"))
        m_impl->bf16 = std::strcmp(env, "0") != 0 && bf16_available();
    else
        m_impl->bf16 = measured_bf16_choice().bf16;
}

CpuMatmul::~CpuMatmul() = default;

int CpuMatmul::threads() const { return m_impl->threads; }
void CpuMatmul::set_threads(int n) { m_impl->threads = std::max(1, n); }
bool CpuMatmul::bf16_enabled() const { return m_impl->bf16; }
std::int64_t CpuMatmul::bf16_operand_copies() const { return m_impl->operand_copies; }
void CpuMatmul::set_bf16_enabled(bool on) { m_impl->bf16 = on && bf16_available(); }
std::string CpuMatmul::bf16_path() const { return m_impl->bf16 ? "oneDNN bf16" : "FP32 on bf16 values"; }

void CpuMatmul::multiply(const float* a, bool trans_a, const float* b, bool trans_b, float* c,
                         std::int64_t m, std::int64_t n, std::int64_t k, bool bf16_operands, bool a_unchanged,
                         KeptBf16Bits kept) {
    if (m <= 0 || n <= 0 || k <= 0) m_impl->a16_source = nullptr;  // this call's A was not copied
    if (m <= 0 || n <= 0) return;
    if (k <= 0) {
        std::memset(c, 0, static_cast<std::size_t>(m * n) * sizeof(float));
        return;
    }
    m_impl->multiply(a, trans_a, b, trans_b, c, m, n, k, bf16_operands, a_unchanged, kept);
}

std::string CpuMatmul::isa_name() {
    using isa = dnnl::cpu_isa;
    switch (dnnl::get_effective_cpu_isa()) {
    case isa::sse41: return "SSE4.1";
    case isa::avx: return "AVX";
    case isa::avx2: return "AVX2";
    case isa::avx2_vnni: return "AVX2 VNNI";
    case isa::avx512_core: return "AVX-512";
    case isa::avx512_core_vnni: return "AVX-512 VNNI";
    case isa::avx512_core_bf16: return "AVX-512 BF16";
    case isa::avx512_core_amx: return "AMX";
    default: return "x86-64";
    }
}

}  // namespace mantissa
