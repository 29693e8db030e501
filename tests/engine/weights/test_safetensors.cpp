// Weights as safetensors files (engine/weights, docs/weights.md):
//  - every code of each small dtype (all 256 FP8 codes, all 65536 F16 and BF16 patterns) through
//    write and read, as bytes and as values, against decoders written here from the formats'
//    definitions; F64 rounded once; wider dtypes rounded to nearest even; overflow refused;
//  - every way a header can be wrong, each one sentence naming the file, and a file that claims
//    more than it holds refused under a memory limit far below what it claims;
//  - the writer: padding, the data's order, atomic replacement, refusals;
//  - a trained network's state dict read by a reader written here from the format's definition,
//    with PyTorch's names, shapes and dtypes, and loaded back bit for bit;
//  - a file written here as PyTorch writes it, starting a run through model.init_from, its first
//    forward held to a reference computed here from the same weights;
//  - a GPT (layer norms, attention, embeddings, a tied head) exported and loaded into a new run
//    that then evaluates exactly as the first;
//  - load_state_dict's refusals (missing, extra, wrong shape, wrong dtype, a tied weight that
//    differs), each leaving the network unchanged;
//  - the CRC-32 a checkpoint keeps per tensor (crc32_of), of bytes in hand and of a tensor read
//    from its file in pieces, against a bitwise CRC-32 written here from its definition.
#include <QtTest>

#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>

#include <nlohmann/json.hpp>

#include "backend/cpu/cpu_backend.h"
#include "error.h"
#include "error_of.h"
#include "model/network.h"
#include "numeric/convert.h"
#include "stripes_dataset.h"
#include "tiny_gpt.h"
#include "train/trainer.h"
#include "weights/safetensors.h"
#include "weights/state_dict.h"
#include "exact_compare.h"

using namespace mantissa;
using test_support::error_of;
using json = nlohmann::json;

namespace {

using Bytes = std::vector<std::uint8_t>;

void write_bytes(const std::string& path, const std::string& bytes) {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

std::string le64(std::uint64_t v) {
    std::string s(8, '\0');
    for (int i = 0; i < 8; ++i, v >>= 8) s[static_cast<std::size_t>(i)] = static_cast<char>(v & 0xFF);
    return s;
}

// A file from a header's text and the data after it (the header padded as writers pad it).
std::string file_of(std::string header, const std::string& data, bool pad = true) {
    if (pad) header.append((8 - header.size() % 8) % 8, ' ');
    return le64(header.size()) + header + data;
}

// ---- decoders written from the formats' definitions, independent of engine/numeric

// A binary floating-point format with e exponent bits and m mantissa bits (IEEE 754's rules):
// bias 2^(e-1) - 1, subnormals at exponent 0, the top exponent inf (mantissa 0) or NaN.
double ieee_value(std::uint32_t bits, int e, int m) {
    const bool negative = (bits >> (e + m)) & 1;
    const std::uint32_t exponent = (bits >> m) & ((1u << e) - 1), mantissa = bits & ((1u << m) - 1);
    const int bias = (1 << (e - 1)) - 1;
    double v;
    if (exponent == (1u << e) - 1) v = mantissa ? NAN : INFINITY;
    else if (exponent == 0) v = std::ldexp(static_cast<double>(mantissa), 1 - bias - m);
    else v = std::ldexp(static_cast<double>(mantissa | (1u << m)), static_cast<int>(exponent) - bias - m);
    return negative ? -v : v;
}

// OCP E4M3 as PyTorch's float8_e4m3fn: bias 7, no infinities, S.1111.111 the only NaNs, so the top
// binade keeps seven finite values and 448 is the largest.
double e4m3fn_value(std::uint32_t bits) {
    const bool negative = bits & 0x80;
    const std::uint32_t exponent = (bits >> 3) & 0xF, mantissa = bits & 7;
    double v;
    if (exponent == 0xF && mantissa == 7) v = NAN;
    else if (exponent == 0) v = std::ldexp(static_cast<double>(mantissa), -9);
    else v = std::ldexp(static_cast<double>(mantissa | 8), static_cast<int>(exponent) - 10);
    return negative ? -v : v;
}

double reference_value(Dtype dtype, std::uint32_t bits) {
    switch (dtype) {
    case Dtype::F16: return ieee_value(bits, 5, 10);
    case Dtype::BF16: return ieee_value(bits, 8, 7);
    case Dtype::F8_E5M2: return ieee_value(bits, 5, 2);
    case Dtype::F8_E4M3: return e4m3fn_value(bits);
    default: return static_cast<double>(std::bit_cast<float>(bits));
    }
}

bool same_value(double a, float b) {
    if (std::isnan(a)) return std::isnan(b);
    return a == static_cast<double>(b) && std::signbit(a) == std::signbit(b);
}

// ---- an independent reader, from the format's definition

struct IndependentTensor {
    std::string dtype;
    std::vector<std::uint64_t> shape;
    std::uint64_t begin = 0, end = 0;
    Bytes bytes;
};

struct IndependentFile {
    std::map<std::string, IndependentTensor> tensors;
    std::vector<std::string> data_order;  // names by their data's place
    json metadata;
    std::uint64_t header_length = 0;
};

// Reads the 8-byte little-endian length, the JSON header, and checks that the tensors' offsets
// tile the data exactly and that each holds shape × element size bytes. QVERIFY-style failures
// come back as an empty optional with the reason in `why`.
std::optional<IndependentFile> read_independently(const std::string& path, std::string& why) {
    std::ifstream in(path, std::ios::binary);
    const std::string all((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (all.size() < 8) return why = "shorter than 8 bytes", std::nullopt;
    std::uint64_t n = 0;
    for (int i = 7; i >= 0; --i) n = (n << 8) | static_cast<unsigned char>(all[static_cast<std::size_t>(i)]);
    if (8 + n > all.size()) return why = "header beyond the file", std::nullopt;
    IndependentFile f;
    f.header_length = n;
    const json header = json::parse(all.substr(8, n));
    const std::map<std::string, int> sizes = {{"F64", 8}, {"I64", 8}, {"F32", 4}, {"F16", 2}, {"BF16", 2},
                                              {"F8_E4M3", 1}, {"F8_E5M2", 1}};
    std::vector<std::pair<std::uint64_t, std::string>> order;
    for (const auto& [name, value] : header.items()) {
        if (name == "__metadata__") {
            f.metadata = value;
            continue;
        }
        IndependentTensor t;
        t.dtype = value.at("dtype").get<std::string>();
        t.shape = value.at("shape").get<std::vector<std::uint64_t>>();
        t.begin = value.at("data_offsets").at(0).get<std::uint64_t>();
        t.end = value.at("data_offsets").at(1).get<std::uint64_t>();
        std::uint64_t elements = 1;
        for (std::uint64_t d : t.shape) elements *= d;
        if (!sizes.count(t.dtype) || t.end - t.begin != elements * static_cast<std::uint64_t>(sizes.at(t.dtype)))
            return why = name + ": offsets do not fit dtype and shape", std::nullopt;
        t.bytes.assign(all.begin() + static_cast<std::ptrdiff_t>(8 + n + t.begin),
                       all.begin() + static_cast<std::ptrdiff_t>(8 + n + t.end));
        order.emplace_back(t.begin, name);
        f.tensors.emplace(name, std::move(t));
    }
    std::sort(order.begin(), order.end());
    std::uint64_t at = 0;
    for (const auto& [begin, name] : order) {
        if (begin != at) return why = name + " does not begin where the tensor before it ends", std::nullopt;
        at = f.tensors.at(name).end;
        f.data_order.push_back(name);
    }
    if (8 + n + at != all.size()) return why = "bytes after the last tensor", std::nullopt;
    return f;
}

// The values of an independently read tensor, decoded here.
std::vector<double> independent_values(const IndependentTensor& t) {
    const std::map<std::string, std::pair<Dtype, int>> kinds = {{"F32", {Dtype::F32, 4}}, {"F16", {Dtype::F16, 2}},
                                                                {"BF16", {Dtype::BF16, 2}}, {"F8_E4M3", {Dtype::F8_E4M3, 1}},
                                                                {"F8_E5M2", {Dtype::F8_E5M2, 1}}};
    const auto [dtype, size] = kinds.at(t.dtype);
    std::vector<double> v;
    for (std::size_t i = 0; i < t.bytes.size(); i += static_cast<std::size_t>(size)) {
        std::uint32_t bits = 0;
        for (int k = size - 1; k >= 0; --k) bits = (bits << 8) | t.bytes[i + static_cast<std::size_t>(k)];
        v.push_back(reference_value(dtype, bits));
    }
    return v;
}

// ---- a file written as PyTorch writes it (safetensors.torch.save_file)

struct TorchTensor {
    std::string name, dtype;  // "F32", "F16", "BF16"
    std::vector<std::uint64_t> shape;
    std::vector<float> values;
};

int torch_size(const std::string& dtype) { return dtype == "F32" ? 4 : 2; }

// The header's compact JSON: "__metadata__" first, then the tensors by element size (largest
// first) and name, each {"dtype","shape","data_offsets"}; padded with spaces to 8 bytes.
std::string torch_file(std::vector<TorchTensor> tensors, const std::string& metadata_json) {
    std::sort(tensors.begin(), tensors.end(), [](const TorchTensor& a, const TorchTensor& b) {
        return torch_size(a.dtype) != torch_size(b.dtype) ? torch_size(a.dtype) > torch_size(b.dtype) : a.name < b.name;
    });
    std::string header = "{\"__metadata__\":" + metadata_json, data;
    for (const TorchTensor& t : tensors) {
        const std::size_t begin = data.size();
        for (float v : t.values) {
            const std::uint32_t f = std::bit_cast<std::uint32_t>(v);
            // PyTorch's own conversions for exactly representable values: F16 and BF16 by their
            // definitions (the test's values are all exact in them).
            std::uint32_t bits = f;
            if (t.dtype == "BF16") bits = f >> 16;
            if (t.dtype == "F16") {
                const int e = static_cast<int>((f >> 23) & 0xFF) - 127 + 15;
                bits = v == 0 ? (f >> 16) & 0x8000 : ((f >> 16) & 0x8000) | (static_cast<std::uint32_t>(e) << 10) | ((f >> 13) & 0x3FF);
            }
            for (int k = 0; k < torch_size(t.dtype); ++k) data += static_cast<char>((bits >> (8 * k)) & 0xFF);
        }
        header += ",\"" + t.name + "\":{\"dtype\":\"" + t.dtype + "\",\"shape\":" + json(t.shape).dump() +
                  ",\"data_offsets\":[" + std::to_string(begin) + "," + std::to_string(data.size()) + "]}";
    }
    return file_of(header + "}", data);
}

// ---- a refusal measured in a child process under an address-space limit

// What `f` says (its mantissa::Error), run in a child whose address space may grow by only
// `headroom` bytes beyond what it uses at the start.
template <class F>
std::string said_under_memory_limit(std::size_t headroom, F&& f) {
    int fds[2];
    if (::pipe(fds) != 0) return "pipe failed";
    const pid_t child = ::fork();
    if (child == 0) {
        ::close(fds[0]);
        long pages = 0;
        if (std::FILE* statm = std::fopen("/proc/self/statm", "r")) {
            if (std::fscanf(statm, "%ld", &pages) != 1) pages = 0;
            std::fclose(statm);
        }
        const auto used = static_cast<rlim_t>(pages) * static_cast<rlim_t>(::sysconf(_SC_PAGE_SIZE));
        const rlimit limit{used + headroom, RLIM_INFINITY};
        ::setrlimit(RLIMIT_AS, &limit);
        std::string says = "no error";
        try {
            f();
        } catch (const Error& e) {
            says = e.what();
        } catch (const std::bad_alloc&) {
            says = "bad_alloc";
        }
        const ssize_t w = ::write(fds[1], says.data(), says.size());
        ::_exit(w == static_cast<ssize_t>(says.size()) ? 0 : 1);
    }
    ::close(fds[1]);
    std::string says;
    char buf[512];
    for (ssize_t n; (n = ::read(fds[0], buf, sizeof buf)) > 0;) says.append(buf, static_cast<std::size_t>(n));
    ::close(fds[0]);
    int status = 0;
    ::waitpid(child, &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) return "the child failed";
    return says;
}

// ---- networks

ModelDesc mlp_desc(int features, std::vector<int> hidden, int outputs) {
    ModelSpec m;
    m.hidden = std::move(hidden);
    return describe_model(m, features, outputs, false);
}

std::vector<LayerFormats> fp32_formats(const ModelDesc& d) {
    return std::vector<LayerFormats>(d.layers.size(), resolve_layer_formats(LayerPrecision::fp32, Autocast::off, true));
}

// Every state entry's values, by name (counts left out).
std::map<std::string, std::vector<float>> values_of(const Network& net) {
    std::map<std::string, std::vector<float>> v;
    for (const StateEntry& e : net.state())
        if (e.tensor) v[e.name] = net.read(*e.tensor);
    return v;
}

bool bitwise_equal(const std::vector<float>& a, const std::vector<float>& b) {
    return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

std::string text_file(const QTemporaryDir& dir) {
    const std::string path = dir.path().toStdString() + "/verse.txt";
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    for (int i = 0; i < 40; ++i) out << "the cat sat on the mat; the dog sat on the log.\n";
    return path;
}

}  // namespace

class TestSafetensors : public QObject {
    Q_OBJECT
private slots:
    // ---- dtypes and values

    void everyCodeRoundTrips_data() {
        QTest::addColumn<int>("dtype_code");
        QTest::newRow("F8_E4M3") << int(Dtype::F8_E4M3);
        QTest::newRow("F8_E5M2") << int(Dtype::F8_E5M2);
        QTest::newRow("F16") << int(Dtype::F16);
        QTest::newRow("BF16") << int(Dtype::BF16);
    }
    void everyCodeRoundTrips() {
        QFETCH(int, dtype_code);
        const auto dtype = static_cast<Dtype>(dtype_code);
        const int bytes = dtype_bits(dtype) / 8;
        const std::uint32_t codes = 1u << dtype_bits(dtype);
        QTemporaryDir dir;
        const std::string raw_path = dir.path().toStdString() + "/raw.safetensors";
        const std::string values_path = dir.path().toStdString() + "/values.safetensors";

        // As bytes: written and read back unchanged, every code.
        SafetensorsTensor raw{"codes", dtype, {codes}, {}};
        for (std::uint32_t c = 0; c < codes; ++c)
            for (int k = 0; k < bytes; ++k) raw.bytes.push_back(static_cast<std::uint8_t>(c >> (8 * k)));
        const Bytes original = raw.bytes;
        write_safetensors(raw_path, {raw});
        const SafetensorsFile raw_file(raw_path);
        QCOMPARE(raw_file.entries().size(), std::size_t{1});
        QVERIFY(raw_file.read_bytes(raw_file.entries()[0]) == original);

        // As values: each code's value is what the format's definition says, exactly.
        const Format format = *format_of(dtype);
        const std::vector<float> values = raw_file.read_values(raw_file.entries()[0], format);
        for (std::uint32_t c = 0; c < codes; ++c)
            QVERIFY2(same_value(reference_value(dtype, c), values[c]),
                     qPrintable(QString("code 0x%1 reads %2").arg(c, 0, 16).arg(double(values[c]))));

        // Values written from floats become the same codes (a NaN: some NaN code).
        write_safetensors(values_path, {safetensors_tensor("codes", dtype, {codes}, values)});
        const SafetensorsFile values_file(values_path);
        const Bytes written = values_file.read_bytes(values_file.entries()[0]);
        for (std::uint32_t c = 0; c < codes; ++c) {
            std::uint32_t w = 0;
            for (int k = bytes - 1; k >= 0; --k) w = (w << 8) | written[c * static_cast<std::uint32_t>(bytes) + static_cast<std::uint32_t>(k)];
            if (std::isnan(values[c])) QVERIFY(std::isnan(reference_value(dtype, w)));
            else QVERIFY2(w == c, qPrintable(QString("code 0x%1 written as 0x%2").arg(c, 0, 16).arg(w, 0, 16)));
        }
    }

    void f32BitPatternsRoundTrip() {
        // Every exponent with mantissas at the edges and a few between, both signs: 4096 patterns.
        std::vector<float> values;
        for (std::uint32_t sign = 0; sign < 2; ++sign)
            for (std::uint32_t e = 0; e < 256; ++e)
                for (std::uint32_t m : {0u, 1u, 2u, 0x400000u, 0x7FFFFFu, 0x123456u, 0x2AAAAAu, 0x555555u})
                    values.push_back(std::bit_cast<float>((sign << 31) | (e << 23) | m));
        QTemporaryDir dir;
        const std::string path = dir.path().toStdString() + "/f32.safetensors";
        write_safetensors(path, {safetensors_tensor("v", Dtype::F32, {values.size()}, values)});
        const SafetensorsFile f(path);
        const std::vector<float> back = f.read_values(f.entries()[0]);
        QVERIFY(bitwise_equal(back, values));  // NaN payloads included: F32 is copied as it is
    }

    // Mantissa's fp8-e4m3 is PyTorch's float8_e4m3fn and fp8-e5m2 its float8_e5m2.
    void fp8FormatsArePytorchs() {
        const FormatInfo& e4m3 = format_info(Format::fp8_e4m3);
        QCOMPARE(e4m3.max_finite, 448.0f);
        QVERIFY(!e4m3.has_infinity);
        QCOMPARE(decode(Format::fp8_e4m3, 0x7E), 448.0f);
        QVERIFY(std::isnan(decode(Format::fp8_e4m3, 0x7F)) && std::isnan(decode(Format::fp8_e4m3, 0xFF)));
        QCOMPARE(decode(Format::fp8_e4m3, 0x78), 256.0f);  // S.1111.000 is a number, not inf
        QCOMPARE(decode(Format::fp8_e4m3, 0x01), 0x1p-9f);
        const FormatInfo& e5m2 = format_info(Format::fp8_e5m2);
        QCOMPARE(e5m2.max_finite, 57344.0f);
        QVERIFY(std::isinf(decode(Format::fp8_e5m2, 0x7C)));
        QVERIFY(dtype_of(Format::fp8_e4m3) == Dtype::F8_E4M3);
        QVERIFY(dtype_of(Format::fp8_e5m2) == Dtype::F8_E5M2);
        QVERIFY(dtype_of(Format::tf32) == Dtype::F32);
        QVERIFY(format_of(Dtype::F8_E4M3) == Format::fp8_e4m3 && !format_of(Dtype::F8_E8M0));
    }

    // F64 is rounded once to the stored format, never through FP32 first: 1 + 2^-11 + 2^-40 lies just
    // above the midpoint of fp16's 1 and 1 + 2^-10, which FP32 would round it onto (then to 1).
    void f64IsRoundedOnce() {
        const std::vector<double> values = {1.0 + 0x1p-11 + 0x1p-40, -(1.0 + 0x1p-11 + 0x1p-40), 1.0 + 0x1p-11,
                                            0.1, 1e-30, 65519.99, std::nan(""), -INFINITY};
        std::string data;
        for (double v : values) data += le64(std::bit_cast<std::uint64_t>(v));
        QTemporaryDir dir;
        const std::string path = dir.path().toStdString() + "/f64.safetensors";
        write_bytes(path, file_of(R"({"x":{"dtype":"F64","shape":[8],"data_offsets":[0,64]}})", data));
        const SafetensorsFile f(path);
        const std::vector<float> fp16 = f.read_values(f.entries()[0], Format::fp16);
        QCOMPARE(fp16[0], 1.0f + 0x1p-10f);
        QCOMPARE(fp16[1], -(1.0f + 0x1p-10f));
        QCOMPARE(fp16[2], 1.0f);  // a true tie: to even
        QCOMPARE(fp16[3], round_to(Format::fp16, 0.1f));  // 0.1 is no tie: once or twice agree
        QCOMPARE_EXACT(fp16[4], 0.0f);
        QCOMPARE(fp16[5], 65504.0f);  // below the overflow threshold 65520
        QVERIFY(std::isnan(fp16[6]));
        QVERIFY(std::isinf(fp16[7]) && fp16[7] < 0);
        const std::vector<float> fp32 = f.read_values(f.entries()[0], Format::fp32);
        QCOMPARE(fp32[3], 0.1f);
        QCOMPARE(fp32[0], static_cast<float>(1.0 + 0x1p-11 + 0x1p-40));
        const std::vector<float> bf16 = f.read_values(f.entries()[0], Format::bf16);
        QCOMPARE(bf16[0], 1.0f);  // bf16's midpoints are elsewhere: 1 + 2^-11 is below 1 + 2^-8
    }

    // A wider dtype rounds to nearest, ties to even; a finite value the format cannot hold is refused.
    void widerDtypesRoundToNearestEven() {
        const std::vector<float> values = {1.0f + 0x1p-8f, 1.0f + 3 * 0x1p-8f, 1.0f + 0x1p-8f + 0x1p-20f, 3.0e38f};
        QTemporaryDir dir;
        const std::string path = dir.path().toStdString() + "/f32.safetensors";
        write_safetensors(path, {safetensors_tensor("layer.weight", Dtype::F32, {2, 2}, values)});
        const SafetensorsFile f(path);
        const std::vector<float> bf16 = f.read_values(f.entries()[0], Format::bf16);
        QCOMPARE(bf16[0], 1.0f);                 // the tie goes to the even neighbour
        QCOMPARE(bf16[1], 1.0f + 0x1p-6f);       // here the even neighbour is the upper one
        QCOMPARE(bf16[2], 1.0f + 0x1p-7f);       // above the tie
        QCOMPARE(bf16[3], round_to(Format::bf16, 3.0e38f));
        const QString says = error_of([&] { (void)f.read_values(f.entries()[0], Format::fp16); });
        QCOMPARE(says, QString::fromStdString(path + ": tensor layer.weight holds 3.00000001e+38 at [1, 1], beyond "
                                                     "fp16's largest finite value 65504, the format it is stored in."));
        const QString e4m3 = error_of([&] { (void)f.read_values(f.entries()[0], Format::fp8_e4m3); });
        QVERIFY2(e4m3.contains("holds 3.00000001e+38 at [1, 1], beyond fp8-e4m3's largest finite value 448"), qPrintable(e4m3));
    }

    void otherDtypesAreRawOrIntegers() {
        // I64, U8, BOOL, C64 and an F4 tensor: readable as bytes; integers as integers; none as floats.
        std::string data = le64(static_cast<std::uint64_t>(-5)) + le64(7);                 // I64 [2] at 0..16
        data += std::string("\x01\x02\x03", 3) + std::string("\x00", 1);                  // U8 [3] 16..19, BOOL [] 19..20
        data += std::string("\x12\x34", 2);                                               // F4 [4] 20..22
        const std::string header = R"({"i":{"dtype":"I64","shape":[2],"data_offsets":[0,16]},)"
                                   R"("u":{"dtype":"U8","shape":[3],"data_offsets":[16,19]},)"
                                   R"("b":{"dtype":"BOOL","shape":[],"data_offsets":[19,20]},)"
                                   R"("q":{"dtype":"F4","shape":[4],"data_offsets":[20,22]}})";
        QTemporaryDir dir;
        const std::string path = dir.path().toStdString() + "/ints.safetensors";
        write_bytes(path, file_of(header, data));
        const SafetensorsFile f(path);
        QCOMPARE(f.entries().size(), std::size_t{4});
        QCOMPARE(f.entries()[0].name, std::string("i"));  // in the data's order
        QCOMPARE(f.read_integers(*f.find("i")), (std::vector<std::int64_t>{-5, 7}));
        QCOMPARE(f.read_integers(*f.find("u")), (std::vector<std::int64_t>{1, 2, 3}));
        QCOMPARE(f.read_integers(*f.find("b")), (std::vector<std::int64_t>{0}));
        QCOMPARE(f.read_bytes(*f.find("q")), (Bytes{0x12, 0x34}));
        QCOMPARE(error_of([&] { (void)f.read_values(*f.find("i")); }),
                 QString::fromStdString(path + ": tensor i holds I64 values, and real numbers are needed here (F32, "
                                               "F16, BF16, F8_E4M3, F8_E5M2 or F64)."));
        QVERIFY(error_of([&] { (void)f.read_values(*f.find("q")); }).contains("holds F4 values"));
        QVERIFY(error_of([&] { (void)f.read_integers(*f.find("q")); }).contains("whole numbers are needed"));
    }

    // ---- bad files: each one sentence naming the file

    void badFilesAreRefused_data() {
        QTest::addColumn<QByteArray>("bytes");
        QTest::addColumn<QString>("says");  // after "<path>: "
        const auto row = [](const char* name, const std::string& bytes, const char* says) {
            QTest::newRow(name) << QByteArray(bytes.data(), static_cast<int>(bytes.size())) << QString::fromUtf8(says);
        };
        const std::string f32x2 = std::string(8, '\0');
        row("shorter than 8 bytes", "abcde",
            "it is 5 bytes long, too short for a safetensors file, whose header's length alone takes 8 bytes.");
        row("header above the limit", le64(100'000'001) + "{}",
            "its header claims 100000001 bytes, more than 100000000, the limit of the safetensors format; it is not a "
            "safetensors file, or it is damaged.");
        row("header beyond the file", le64(50) + "{}      ",
            "its header claims 50 bytes, but the file holds 8 after the header's length; it is cut short, or not a "
            "safetensors file.");
        row("not UTF-8", file_of("{\"fc\xFF\":{}}", ""),
            "its header is not UTF-8 text (byte 0xFF at offset 4 of the header); it is not a safetensors file, or it "
            "is damaged.");
        row("not JSON", file_of("{\"a\": [1, 2}", ""),
            "its header is not JSON: line 1, column 12: expected ',' or ']', found '}', but the array opened at line "
            "1, column 7 closes with ']'.");
        row("padded with NULs", le64(8) + std::string("{}\0\0\0\0\0\0", 8),
            "its header is not JSON: it holds a NUL byte at offset 2 of the header (a safetensors header is padded "
            "with spaces).");
        row("an array", file_of("[1, 2]", ""), "its header is an array, not a JSON object of tensors.");
        row("entry not an object", file_of(R"({"w": 3})", ""),
            "tensor w's entry is a number, not an object {\"dtype\": ..., \"shape\": [...], \"data_offsets\": [begin, end]}.");
        row("no dtype", file_of(R"({"w": {"shape": [2], "data_offsets": [0, 8]}})", f32x2), "tensor w has no \"dtype\".");
        row("no shape", file_of(R"({"w": {"dtype": "F32", "data_offsets": [0, 8]}})", f32x2), "tensor w has no \"shape\".");
        row("no data_offsets", file_of(R"({"w": {"dtype": "F32", "shape": [2]}})", f32x2),
            "tensor w has no \"data_offsets\".");
        row("dtype a number", file_of(R"({"w": {"dtype": 32, "shape": [2], "data_offsets": [0, 8]}})", f32x2),
            "tensor w's \"dtype\" is a number, not a string such as \"F32\".");
        row("unknown dtype", file_of(R"({"w": {"dtype": "float32", "shape": [2], "data_offsets": [0, 8]}})", f32x2),
            "tensor w has the dtype \"float32\", which the safetensors format does not define (it defines BOOL, F4, "
            "F6_E2M3, F6_E3M2, U8, I8, F8_E5M2, F8_E4M3, F8_E8M0, I16, U16, F16, BF16, I32, U32, F32, C64, F64, I64, U64).");
        row("negative size", file_of(R"({"w": {"dtype": "F32", "shape": [2, -1], "data_offsets": [0, 8]}})", f32x2),
            "tensor w's shape [2,-1] holds -1, not a whole number >= 0.");
        row("fractional size", file_of(R"({"w": {"dtype": "F32", "shape": [2.0], "data_offsets": [0, 8]}})", f32x2),
            "tensor w's shape [2.0] holds 2.0, not a whole number >= 0.");
        row("shape a string", file_of(R"({"w": {"dtype": "F32", "shape": "2", "data_offsets": [0, 8]}})", f32x2),
            "tensor w's \"shape\" is a string, not an array of sizes.");
        row("product overflows",
            file_of(R"({"w": {"dtype": "F32", "shape": [4294967296, 4294967296], "data_offsets": [0, 8]}})", f32x2),
            "tensor w's shape (4294967296, 4294967296) has more elements of F32 than 64 bits can count.");
        row("bytes overflow", file_of(R"({"w": {"dtype": "F64", "shape": [4611686018427387904], "data_offsets": [0, 8]}})", f32x2),
            "tensor w's shape (4611686018427387904) has more elements of F64 than 64 bits can count.");
        row("F4 half a byte", file_of(R"({"w": {"dtype": "F4", "shape": [3], "data_offsets": [0, 2]}})", "ab"),
            "tensor w's 3 F4 values take 12 bits, not a whole number of bytes.");
        row("offsets not a pair", file_of(R"({"w": {"dtype": "F32", "shape": [2], "data_offsets": [0]}})", f32x2),
            "tensor w's data_offsets [0] are not two whole numbers [begin, end] >= 0.");
        row("offsets negative", file_of(R"({"w": {"dtype": "F32", "shape": [2], "data_offsets": [-8, 0]}})", f32x2),
            "tensor w's data_offsets [-8,0] are not two whole numbers [begin, end] >= 0.");
        row("offsets reversed", file_of(R"({"w": {"dtype": "F32", "shape": [2], "data_offsets": [8, 0]}})", f32x2),
            "tensor w's data_offsets [8, 0] end before they begin.");
        row("length does not fit the shape",
            file_of(R"({"fc1.weight": {"dtype": "F32", "shape": [256, 784], "data_offsets": [0, 100]}})", std::string(100, '\0')),
            "tensor fc1.weight's data_offsets [0, 100] hold 100 bytes but F32 (256, 784) needs 802816.");
        row("beyond the data", file_of(R"({"w": {"dtype": "F32", "shape": [250000000000], "data_offsets": [0, 1000000000000]}})",
                                       std::string(64, '\0')),
            "tensor w's data_offsets [0, 1000000000000] reach beyond the 64 bytes of data the file holds after its header.");
        row("overlap", file_of(R"({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},)"
                               R"("b": {"dtype": "F32", "shape": [2], "data_offsets": [4, 12]}})", std::string(12, '\0')),
            "tensor b's data_offsets [4, 12] overlap tensor a's [0, 8].");
        row("the same bytes twice", file_of(R"({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},)"
                                            R"("b": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}})", f32x2),
            "tensor b's data_offsets [0, 8] overlap tensor a's [0, 8].");
        row("a gap", file_of(R"({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},)"
                             R"("b": {"dtype": "F32", "shape": [2], "data_offsets": [12, 20]}})", std::string(20, '\0')),
            "bytes 8 to 12 of its data belong to no tensor (a gap before tensor b's data_offsets [12, 20]).");
        row("not from the start", file_of(R"({"a": {"dtype": "F32", "shape": [2], "data_offsets": [4, 12]}})", std::string(12, '\0')),
            "bytes 0 to 4 of its data belong to no tensor (a gap before tensor a's data_offsets [4, 12]).");
        row("bytes after the last", file_of(R"({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}})", std::string(11, '\0')),
            "it holds 11 bytes of data after its header, but its tensors end at byte 8; the last 3 belong to no tensor.");
        row("a name twice", file_of(R"({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},)"
                                    R"("a": {"dtype": "F32", "shape": [2], "data_offsets": [8, 16]}})", std::string(16, '\0')),
            "its header names \"a\" twice.");
        row("a key twice", file_of(R"({"a": {"dtype": "F32", "dtype": "F16", "shape": [2], "data_offsets": [0, 8]}})", f32x2),
            "the entry of \"a\" names \"dtype\" twice.");
        row("metadata not an object", file_of(R"({"__metadata__": ["pt"]})", ""),
            "its \"__metadata__\" is an array, not an object of strings.");
        row("metadata not strings", file_of(R"({"__metadata__": {"format": "pt", "epoch": 3}})", ""),
            "its \"__metadata__\" holds a number for \"epoch\"; its values must be strings.");
        row("deep nesting", file_of(std::string(200, '[') + std::string(200, ']'), ""),
            "its header nests JSON more than 128 levels deep.");
    }
    void badFilesAreRefused() {
        QFETCH(QByteArray, bytes);
        QFETCH(QString, says);
        QTemporaryDir dir;
        const std::string path = dir.path().toStdString() + "/model.safetensors";
        write_bytes(path, bytes.toStdString());
        const QString error = error_of([&] { SafetensorsFile f(path); });
        const QString start = QString::fromStdString(path) + ": " + says;
        if (says.endsWith('.')) QCOMPARE(error, start);
        else QVERIFY2(error.startsWith(start) && error.endsWith('.') && !error.contains('\n'), qPrintable(error));
    }

    void validFilesAreRead() {
        QTemporaryDir dir;
        const std::string path = dir.path().toStdString() + "/ok.safetensors";
        // No tensors at all; a null "__metadata__"; zero-sized tensors sharing an offset; a scalar;
        // unknown keys in an entry are ignored (as the reference reader ignores them).
        write_bytes(path, file_of("{}", ""));
        QVERIFY(SafetensorsFile(path).entries().empty());
        write_bytes(path, file_of(R"({"__metadata__": null, "e": {"dtype": "F32", "shape": [0, 3], "data_offsets": [0, 0]},)"
                                  R"("f": {"dtype": "F16", "shape": [3, 0], "data_offsets": [0, 0]},)"
                                  R"("s": {"dtype": "F32", "shape": [], "data_offsets": [0, 4], "note": 1}})",
                                  std::string("\x00\x00\x80\x3F", 4)));
        const SafetensorsFile f(path);
        QCOMPARE(f.entries().size(), std::size_t{3});
        QVERIFY(f.metadata().empty());
        QCOMPARE(f.read_values(*f.find("s")), std::vector<float>{1.0f});
        QVERIFY(f.read_values(*f.find("e")).empty());
        // Not a regular file, or not there: user_file.h's sentences.
        QCOMPARE(error_of([&] { SafetensorsFile g(dir.path().toStdString()); }),
                 QString::fromStdString("The safetensors file " + dir.path().toStdString() + " is a folder, not a file."));
        QCOMPARE(error_of([&] { SafetensorsFile g(path + ".missing"); }),
                 QString::fromStdString("The safetensors file " + path + ".missing does not exist."));
    }

    // CRC-32 as zlib and Python's zlib.crc32 compute it (reflected polynomial 0xEDB88320, all ones
    // in and out): its check value, and a tensor of 5 MiB and 3 bytes, which the file's reader
    // takes in two pieces, against a bitwise reference.
    void crc32IsZlibsOverTheTensorsBytes() {
        const auto reference = [](const Bytes& bytes) {
            std::uint32_t crc = 0xFFFFFFFFu;
            for (std::uint8_t b : bytes) {
                crc ^= b;
                for (int k = 0; k < 8; ++k) crc = (crc >> 1) ^ (0xEDB88320u & (0u - (crc & 1u)));
            }
            return ~crc;
        };
        const std::string check = "123456789";
        QCOMPARE(crc32_of(Bytes(check.begin(), check.end())), 0xCBF43926u);
        QCOMPARE(crc32_of(Bytes{}), 0u);
        QTemporaryDir dir;
        const std::string path = dir.path().toStdString() + "/crc.safetensors";
        Bytes big((std::size_t{5} << 20) + 3);
        std::uint32_t x = 12345;
        for (std::uint8_t& b : big) b = static_cast<std::uint8_t>((x = x * 1103515245u + 12345u) >> 24);
        write_safetensors(path, {{"big", Dtype::U8, {big.size()}, big},
                                 {"empty", Dtype::F32, {0}, {}},
                                 {"one", Dtype::F32, {}, {0x00, 0x00, 0x80, 0x3F}}});
        const SafetensorsFile f(path);
        QCOMPARE(f.crc32_of(*f.find("big")), reference(big));
        QCOMPARE(crc32_of(big), reference(big));
        QCOMPARE(f.crc32_of(*f.find("empty")), 0u);
        QCOMPARE(f.crc32_of(*f.find("one")), reference({0x00, 0x00, 0x80, 0x3F}));
        QCOMPARE(f.crc32_of(*f.find("one")), 0xACA16A6Au);  // Python: zlib.crc32(struct.pack("<f", 1.0))
    }

    // A file that claims more than it holds is refused from its header: under an address-space
    // limit of 64 MiB beyond what the process uses, where the claims are of a terabyte.
    void refusedBeforeAllocating() {
#if defined(__SANITIZE_ADDRESS__)
        QSKIP("AddressSanitizer maps more address space than an address-space limit leaves");
#endif
        QTemporaryDir dir;
        const std::string path = dir.path().toStdString() + "/claims.safetensors";
        const std::size_t headroom = std::size_t{64} << 20;
        // 10^12 bytes of data claimed in a file of 100 bytes.
        std::string bytes = file_of(R"({"w":{"dtype":"F32","shape":[250000000000],"data_offsets":[0,1000000000000]}})", "");
        bytes.resize(100, '\0');
        write_bytes(path, bytes);
        std::string says = said_under_memory_limit(headroom, [&] { SafetensorsFile f(path); });
        QVERIFY2(says.find("reach beyond the") != std::string::npos, says.c_str());
        // A header of 10^12 bytes claimed.
        write_bytes(path, le64(1'000'000'000'000) + std::string(92, ' '));
        says = said_under_memory_limit(headroom, [&] { SafetensorsFile f(path); });
        QVERIFY2(says.find("its header claims 1000000000000 bytes") != std::string::npos, says.c_str());
        // A header of 90 MB claimed in a file of 100 bytes (below the header's limit).
        write_bytes(path, le64(90'000'000) + std::string(92, ' '));
        says = said_under_memory_limit(headroom, [&] { SafetensorsFile f(path); });
        QVERIFY2(says.find("but the file holds 92 after the header's length") != std::string::npos, says.c_str());
        // And through load_state_dict, into a network built before the limit.
        CpuBackend be;
        const ModelDesc desc = mlp_desc(784, {256}, 10);
        Network net(be, desc, 4, 1, Fp8Recipe{}, fp32_formats(desc));
        write_bytes(path, bytes);
        says = said_under_memory_limit(headroom, [&] { load_state_dict(net, path); });
        QVERIFY2(says.find("reach beyond the") != std::string::npos, says.c_str());
    }

    // ---- the writer

    void writerLaysOutAsPytorch() {
        QTemporaryDir dir;
        const std::string path = dir.path().toStdString() + "/w.safetensors";
        std::vector<SafetensorsTensor> tensors;
        tensors.push_back(safetensors_tensor("z.f8", Dtype::F8_E4M3, {3}, std::vector<float>{1, 2, 3}));
        tensors.push_back(safetensors_tensor("b.f32", Dtype::F32, {1}, std::vector<float>{4}));
        tensors.push_back(safetensors_tensor("a.bf16", Dtype::BF16, {2}, std::vector<float>{5, 6}));
        tensors.push_back(safetensors_tensor("a.f32", Dtype::F32, {2, 1}, std::vector<float>{7, 8}));
        tensors.push_back({"count", Dtype::I64, {}, Bytes{9, 0, 0, 0, 0, 0, 0, 0}});
        write_safetensors(path, tensors, {{"format", "pt"}});
        std::string why;
        const std::optional<IndependentFile> f = read_independently(path, why);
        QVERIFY2(f, why.c_str());
        QCOMPARE(f->header_length % 8, std::uint64_t{0});
        QCOMPARE(f->data_order, (std::vector<std::string>{"count", "a.f32", "b.f32", "a.bf16", "z.f8"}));
        QVERIFY(f->metadata == json({{"format", "pt"}}));
        QCOMPARE(independent_values(f->tensors.at("a.f32")), (std::vector<double>{7, 8}));
        QCOMPARE(independent_values(f->tensors.at("z.f8")), (std::vector<double>{1, 2, 3}));
        // The header as save_file writes it: compact, "__metadata__" first, then the data's order.
        std::ifstream in(path, std::ios::binary);
        std::string all((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
        QVERIFY(all.substr(8).starts_with(R"({"__metadata__":{"format":"pt"},"count":{"dtype":"I64","shape":[],"data_offsets":[0,8]},"a.f32":)"));
        // Nothing left beside it.
        QCOMPARE(QDir(dir.path()).entryList(QDir::Files), QStringList{"w.safetensors"});
    }

    void writerReplacesAtomicallyAndRefuses() {
        QTemporaryDir dir;
        const std::string path = dir.path().toStdString() + "/w.safetensors";
        write_bytes(path, "old contents");
        write_safetensors(path, {safetensors_tensor("x", Dtype::F32, {1}, std::vector<float>{1})});
        const SafetensorsFile replaced(path);
        QCOMPARE(replaced.read_values(*replaced.find("x")), std::vector<float>{1.0f});
        const auto fails = [&](const std::string& where, std::vector<SafetensorsTensor> t, const QString& says) {
            const QString error = error_of([&] { write_safetensors(where, std::move(t)); });
            QVERIFY2(error == QString::fromStdString("Cannot write the safetensors file " + where + ": ") + says, qPrintable(error));
        };
        const SafetensorsTensor one = safetensors_tensor("x", Dtype::F32, {1}, std::vector<float>{1});
        fails(dir.path().toStdString() + "/no/such/folder.safetensors", {one}, "No such file or directory.");
        fails(path, {one, one}, "two tensors are named x.");
        fails(path, {{"__metadata__", Dtype::F32, {1}, Bytes(4)}}, "\"__metadata__\" names the metadata, not a tensor.");
        fails(path, {{"w", Dtype::F32, {2}, Bytes(4)}}, "tensor w holds 4 bytes, which is not what F32 (2) takes.");
        fails(path, {{"bad\xFF", Dtype::F32, {1}, Bytes(4)}}, "the tensor name bad\\xFF is not UTF-8.");
        fails(dir.path().toStdString(), {one}, "it exists and is not a regular file.");
        QCOMPARE(QDir(dir.path()).entryList(QDir::Files), QStringList{"w.safetensors"});  // no partial files left
        QCOMPARE(error_of([&] { (void)safetensors_tensor("i", Dtype::I32, {1}, std::vector<float>{1}); }),
                 QString("Tensor i: float values cannot be written as I32; use F32, F16, BF16, F8_E4M3, F8_E5M2 or F64."));
    }

    // ---- state dicts

    // Names as PyTorch's state_dict() gives them for the same models (torchvision's ResNet, a
    // nanoGPT-style decoder), shapes as PyTorch's.
    void stateDictNamesArePytorchs() {
        ModelSpec resnet;
        resnet.kind = "resnet";
        resnet.channels = {4, 8};
        resnet.blocks = 1;
        const ModelDesc rdesc = describe_model(resnet, SampleShape{3, 8, 8}, 10, false);
        CpuBackend be;
        Network rnet(be, rdesc, 2, 1, Fp8Recipe{}, fp32_formats(rdesc));
        std::vector<std::string> names;
        for (const StateEntry& e : rnet.state()) names.push_back(e.name);
        const auto bn = [](const std::string& p) {
            return std::vector<std::string>{p + ".weight", p + ".bias", p + ".running_mean", p + ".running_var",
                                            p + ".num_batches_tracked"};
        };
        std::vector<std::string> expected = {"conv1.weight"};
        const auto add = [&](const std::vector<std::string>& more) { expected.insert(expected.end(), more.begin(), more.end()); };
        add(bn("bn1"));
        add({"layer1.0.conv1.weight"}), add(bn("layer1.0.bn1")), add({"layer1.0.conv2.weight"}), add(bn("layer1.0.bn2"));
        add({"layer2.0.conv1.weight"}), add(bn("layer2.0.bn1")), add({"layer2.0.conv2.weight"}), add(bn("layer2.0.bn2"));
        add({"layer2.0.downsample.0.weight"}), add(bn("layer2.0.downsample.1"));
        add({"fc.weight", "fc.bias"});
        QCOMPARE(names, expected);
        const std::vector<StateEntry> rs = rnet.state();
        QCOMPARE(rs[0].shape, (std::vector<std::int64_t>{4, 3, 3, 3}));
        QCOMPARE(rs[5].shape, std::vector<std::int64_t>{});  // num_batches_tracked: a scalar
        QCOMPARE(rs.back().shape, std::vector<std::int64_t>{10});

        QTemporaryDir dir;
        Experiment g = test::tiny_gpt_experiment(text_file(dir));
        g.model.tie_embeddings = true;
        Trainer t(g, load_dataset(g.dataset, g.train.seed), make_backend("cpu", 0));
        names.clear();
        std::map<std::string, std::vector<std::int64_t>> shapes;
        for (const StateEntry& e : t.network().state()) names.push_back(e.name), shapes[e.name] = e.shape;
        const std::vector<std::string> gpt = {
            "wte.weight", "wpe.weight", "blocks.0.ln1.weight", "blocks.0.ln1.bias", "blocks.0.attn.qkv.weight",
            "blocks.0.attn.qkv.bias", "blocks.0.attn.proj.weight", "blocks.0.attn.proj.bias", "blocks.0.ln2.weight",
            "blocks.0.ln2.bias", "blocks.0.mlp.fc.weight", "blocks.0.mlp.fc.bias", "blocks.0.mlp.proj.weight",
            "blocks.0.mlp.proj.bias", "ln_f.weight", "ln_f.bias", "head.weight"};
        QCOMPARE(names, gpt);
        const std::int64_t vocab = t.dataset().outputs;
        QCOMPARE(shapes["wte.weight"], (std::vector<std::int64_t>{vocab, 16}));
        QCOMPARE(shapes["head.weight"], (std::vector<std::int64_t>{vocab, 16}));
        QCOMPARE(shapes["wpe.weight"], (std::vector<std::int64_t>{16, 16}));
        QCOMPARE(shapes["blocks.0.attn.qkv.weight"], (std::vector<std::int64_t>{48, 16}));
        QCOMPARE(shapes["blocks.0.ln1.weight"], std::vector<std::int64_t>{16});
        QCOMPARE(shapes["blocks.0.mlp.fc.weight"], (std::vector<std::int64_t>{32, 16}));
    }

    // A trained CNN in mixed formats, saved, then read by the reader written here: PyTorch's names,
    // shapes and the dtypes of the stored formats, values exactly the network's; then loaded into a
    // new run through model.init_from, bit for bit.
    void trainedStateDictReadsIndependently() {
        Experiment e;
        e.name = "cnn";
        e.backend = "cpu";
        e.model.kind = "cnn";
        e.model.channels = {4};
        e.model.hidden = {8};
        e.train.batch_size = 16;
        e.train.steps = 6;
        e.train.eval_every = 0;
        e.train.lr = 0.01;
        e.precision.autocast = Autocast::off;
        e.precision.master_weights = false;
        e.precision.loss_scaling.mode = LossScalingMode::off;
        e.precision.layers = {{"conv1", LayerPrecision::bf16}, {"fc1", LayerPrecision::fp16}, {"fc2", LayerPrecision::fp8_e4m3}};
        Trainer a(e, test_support::stripes(128, 32, 3), make_backend("cpu", 0));
        while (!a.done()) a.step();
        QTemporaryDir dir;
        const std::string path = dir.path().toStdString() + "/cnn.safetensors";
        save_state_dict(a.network(), path, {{{"run", "cnn"}}, 6});

        std::string why;
        const std::optional<IndependentFile> f = read_independently(path, why);
        QVERIFY2(f, why.c_str());
        struct Expect {
            const char* name;
            const char* dtype;
            std::vector<std::uint64_t> shape;
        };
        const std::vector<Expect> expected = {
            {"conv1.weight", "BF16", {4, 1, 3, 3}}, {"conv1.bias", "BF16", {4}},
            {"bn1.weight", "F32", {4}},             {"bn1.bias", "F32", {4}},
            {"bn1.running_mean", "F32", {4}},       {"bn1.running_var", "F32", {4}},
            {"bn1.num_batches_tracked", "I64", {}}, {"fc1.weight", "F16", {8, 64}},
            {"fc1.bias", "F16", {8}},               {"fc2.weight", "F32", {2, 8}},
            {"fc2.bias", "F32", {2}}};
        QCOMPARE(f->tensors.size(), expected.size());
        const std::map<std::string, std::vector<float>> values = values_of(a.network());
        for (const Expect& x : expected) {
            QVERIFY2(f->tensors.count(x.name), x.name);
            const IndependentTensor& t = f->tensors.at(x.name);
            QCOMPARE(t.dtype, std::string(x.dtype));
            QCOMPARE(t.shape, x.shape);
            if (t.dtype == "I64") {
                QCOMPARE(t.bytes, (Bytes{6, 0, 0, 0, 0, 0, 0, 0}));
                continue;
            }
            const std::vector<double> read = independent_values(t);
            const std::vector<float>& mine = values.at(x.name);
            QCOMPARE(read.size(), mine.size());
            for (std::size_t i = 0; i < read.size(); ++i) QVERIFY2(same_value(read[i], mine[i]), x.name);
        }
        // Trained: the running statistics left their start (0 and 1).
        const std::vector<double> mean = independent_values(f->tensors.at("bn1.running_mean"));
        QVERIFY(std::any_of(mean.begin(), mean.end(), [](double v) { return v != 0; }));
        QCOMPARE(f->metadata.at("format").get<std::string>(), std::string("pt"));
        QCOMPARE(f->metadata.at("run").get<std::string>(), std::string("cnn"));
        QVERIFY(f->metadata.at("producer").get<std::string>().starts_with("mantissa "));
        // The data as save_file lays it out: I64, F32 by name, BF16, F16.
        QCOMPARE(f->data_order,
                 (std::vector<std::string>{"bn1.num_batches_tracked", "bn1.bias", "bn1.running_mean", "bn1.running_var",
                                           "bn1.weight", "fc2.bias", "fc2.weight", "conv1.bias", "conv1.weight",
                                           "fc1.bias", "fc1.weight"}));

        // Loaded into a new run of another seed: every tensor bit for bit the trained one's.
        Experiment b = e;
        b.train.seed = 99;
        b.model.init_from = path;
        Trainer loaded(b, test_support::stripes(128, 32, 3), make_backend("cpu", 0));
        const std::map<std::string, std::vector<float>> back = values_of(loaded.network());
        for (const auto& [name, v] : values) QVERIFY2(bitwise_equal(back.at(name), v), name.c_str());
        Experiment c = b;
        c.model.init_from.clear();
        Trainer fresh(c, test_support::stripes(128, 32, 3), make_backend("cpu", 0));
        QVERIFY(!bitwise_equal(values_of(fresh.network()).at("fc1.weight"), values.at("fc1.weight")));  // the file mattered
    }

    // A file written here as PyTorch writes it starts a run (model.init_from); the first forward is
    // what the weights give, computed here in double precision.
    void pytorchFileStartsARun_data() {
        QTest::addColumn<QString>("dtype");
        QTest::newRow("F32") << "F32";
        QTest::newRow("F16") << "F16";
        QTest::newRow("BF16") << "BF16";
    }
    void pytorchFileStartsARun() {
        QFETCH(QString, dtype);
        const int features = 3, hidden = 5, outputs = 2, batch = 4;
        // Weights exact in every dtype here: multiples of 1/16 below 1.
        const auto value = [](int i, int salt) { return static_cast<float>(((i * 37 + salt * 11) % 29) - 14) / 16.0f; };
        std::vector<float> w1(hidden * features), b1(hidden), w2(outputs * hidden), b2(outputs);
        for (std::size_t i = 0; i < w1.size(); ++i) w1[i] = value(static_cast<int>(i), 1);
        for (std::size_t i = 0; i < b1.size(); ++i) b1[i] = value(static_cast<int>(i), 2);
        for (std::size_t i = 0; i < w2.size(); ++i) w2[i] = value(static_cast<int>(i), 3);
        for (std::size_t i = 0; i < b2.size(); ++i) b2[i] = value(static_cast<int>(i), 4);
        const std::string d = dtype.toStdString();
        QTemporaryDir dir;
        const std::string path = dir.path().toStdString() + "/torch.safetensors";
        write_bytes(path, torch_file({{"fc1.weight", d, {hidden, features}, w1}, {"fc1.bias", d, {hidden}, b1},
                                      {"fc2.weight", d, {outputs, hidden}, w2}, {"fc2.bias", d, {outputs}, b2}},
                                     R"({"format":"pt"})"));
        const SafetensorsFile check(path);
        QCOMPARE(check.metadata().at("format"), std::string("pt"));

        Experiment e;
        e.name = "from-torch";
        e.backend = "cpu";
        e.model.hidden = {hidden};
        e.model.init_from = path;
        e.train.batch_size = batch;
        e.train.steps = 1;
        e.train.eval_every = 0;
        e.precision.loss_scaling.mode = LossScalingMode::off;
        Dataset data;
        data.name = "rows";
        data.features = features;
        data.shape = {features, 1, 1};
        data.classes = outputs;
        data.outputs = outputs;
        const std::vector<float> x = {0.5f, -1.25f, 2.0f, 1.0f, 0.0f, -0.75f, -2.0f, 0.25f, 1.5f, 0.125f, 3.0f, -1.0f};
        for (Split* s : {&data.train, &data.test}) {
            s->rows = batch;
            s->x = x;
            s->y = {0, 1, 0, 1};
        }
        Trainer t(e, data, make_backend("cpu", 0));
        t.network().forward(x.data(), batch, false);
        const std::vector<float> y = t.network().read(t.network().output());
        for (int r = 0; r < batch; ++r)
            for (int o = 0; o < outputs; ++o) {
                double z2 = b2[static_cast<std::size_t>(o)];
                for (int h = 0; h < hidden; ++h) {
                    double z1 = b1[static_cast<std::size_t>(h)];
                    for (int k = 0; k < features; ++k)
                        z1 += double(w1[static_cast<std::size_t>(h * features + k)]) * x[static_cast<std::size_t>(r * features + k)];
                    z2 += double(w2[static_cast<std::size_t>(o * hidden + h)]) * std::max(z1, 0.0);
                }
                const float got = y[static_cast<std::size_t>(r * outputs + o)];
                QVERIFY2(std::abs(got - z2) <= 1e-5 * (1 + std::abs(z2)),
                         qPrintable(QString("row %1 output %2: %3, reference %4").arg(r).arg(o).arg(got).arg(z2)));
            }
        // Step 0's loss is the same forward's (in training mode, the same for an MLP).
        const StepReport& s = t.step();
        double loss = 0;
        for (int r = 0; r < batch; ++r) {
            const float* row = y.data() + r * outputs;
            const double m = std::max(row[0], row[1]);
            const double lse = m + std::log(std::exp(row[0] - m) + std::exp(row[1] - m));
            loss += lse - row[data.train.y[static_cast<std::size_t>(r)]];
        }
        QVERIFY2(std::abs(s.step.loss - loss / batch) < 1e-5, qPrintable(QString("%1 vs %2").arg(s.step.loss).arg(loss / batch)));
    }

    // A GPT (embeddings, layer norms, attention, a tied head) exported after training and loaded
    // into a new run evaluates exactly as the run it came from.
    void gptRunFromExportEvaluatesAsTheRun() {
        QTemporaryDir dir;
        Experiment e = test::tiny_gpt_experiment(text_file(dir));
        e.model.tie_embeddings = true;
        e.train.batch_size = 4;
        e.train.steps = 4;
        e.train.eval_every = 0;
        e.train.lr = 3e-3;
        e.dataset.test_fraction = 0.1;
        Trainer a(e, load_dataset(e.dataset, e.train.seed), make_backend("cpu", 0));
        while (!a.done()) a.step();
        const std::string path = dir.path().toStdString() + "/gpt.safetensors";
        save_state_dict(a.network(), path);
        const SafetensorsFile file(path);
        QVERIFY(file.find("head.weight") && file.find("wte.weight"));
        QCOMPARE(file.read_values(*file.find("head.weight")), file.read_values(*file.find("wte.weight")));

        Experiment b = e;
        b.train.seed = 12345;
        b.model.init_from = path;
        Trainer loaded(b, load_dataset(b.dataset, e.train.seed), make_backend("cpu", 0));
        const EvalRecord ea = a.evaluate(), eb = loaded.evaluate();
        QCOMPARE(eb.loss, ea.loss);
        QCOMPARE(eb.accuracy, ea.accuracy);
        const auto va = values_of(a.network()), vb = values_of(loaded.network());
        for (const auto& [name, v] : va) QVERIFY2(bitwise_equal(vb.at(name), v), name.c_str());

        // As safetensors.torch.save_model may keep a tied weight under one name only: the table
        // loads from the head's name.
        const SafetensorsFile full(path);
        std::vector<SafetensorsTensor> kept;
        for (const SafetensorsEntry& x : full.entries())
            if (x.name != "wte.weight") kept.push_back({x.name, x.dtype, x.shape, full.read_bytes(x)});
        const std::string head_only = dir.path().toStdString() + "/head-only.safetensors";
        write_safetensors(head_only, kept);
        b.model.init_from = head_only;
        Trainer from_head(b, load_dataset(b.dataset, e.train.seed), make_backend("cpu", 0));
        QVERIFY(bitwise_equal(values_of(from_head.network()).at("wte.weight"), va.at("wte.weight")));
    }

    void loadRefusalsLeaveTheNetwork() {
        CpuBackend be;
        const ModelDesc desc = mlp_desc(3, {4}, 2);
        std::vector<LayerFormats> formats = fp32_formats(desc);
        formats[1] = resolve_layer_formats(LayerPrecision::fp16, Autocast::off, false);  // fc2 stored in fp16
        Network net(be, desc, 2, 7, Fp8Recipe{}, formats);
        const auto before = values_of(net);
        QTemporaryDir dir;
        const std::string path = dir.path().toStdString() + "/m.safetensors";
        const auto tensor = [](const char* name, Dtype dtype, std::vector<std::uint64_t> shape, float v = 0.5f) {
            std::uint64_t n = 1;
            for (auto s : shape) n *= s;
            return safetensors_tensor(name, dtype, std::move(shape), std::vector<float>(n, v));
        };
        const auto good = [&] {
            return std::vector<SafetensorsTensor>{tensor("fc1.weight", Dtype::F32, {4, 3}), tensor("fc1.bias", Dtype::F32, {4}),
                                                  tensor("fc2.weight", Dtype::F32, {2, 4}), tensor("fc2.bias", Dtype::F32, {2})};
        };
        const auto refused = [&](std::vector<SafetensorsTensor> t, const std::string& says) {
            write_safetensors(path, std::move(t));
            const QString error = error_of([&] { load_state_dict(net, path); });
            QVERIFY2(error == QString::fromStdString(says), qPrintable(error));
            const auto after = values_of(net);
            for (const auto& [name, v] : before) QVERIFY2(bitwise_equal(after.at(name), v), name.c_str());
        };
        auto t = good();
        t.pop_back();
        refused(t, path + " has no tensor fc2.bias, which the model has with shape (2); the file was saved from another "
                          "model, or its names differ.");
        t = good();
        t.push_back(tensor("fc3.weight", Dtype::F32, {2, 2}));
        refused(t, path + ": tensor fc3.weight (F32 (2, 2)) is not a tensor of this model, whose tensors are fc1.weight, "
                          "fc1.bias, fc2.weight, fc2.bias; the file was saved from another model, or its names differ.");
        t = good();
        t[0] = tensor("fc1.weight", Dtype::F32, {3, 4});
        refused(t, path + ": tensor fc1.weight has shape (3, 4), but the model's fc1.weight has shape (4, 3).");
        t = good();
        t[1] = tensor("fc1.bias", Dtype::F32, {1, 4});
        refused(t, path + ": tensor fc1.bias has shape (1, 4), but the model's fc1.bias has shape (4).");
        t = good();
        t[1] = {"fc1.bias", Dtype::I32, {4}, Bytes(16)};
        refused(t, path + ": tensor fc1.bias holds I32 values, and the model's fc1.bias holds real numbers: F32, F16, "
                          "BF16, F8_E4M3, F8_E5M2 or F64 are read.");
        t = good();
        t[2] = tensor("fc2.weight", Dtype::F32, {2, 4}, 70000.0f);  // fc2 is stored in fp16
        refused(t, path + ": tensor fc2.weight holds 70000 at [0, 0], beyond fp16's largest finite value 65504, the "
                          "format it is stored in.");
        // A good file loads, rounded into each tensor's format.
        t = good();
        t[2] = tensor("fc2.weight", Dtype::F32, {2, 4}, 1.0f + 0x1p-12f);
        write_safetensors(path, t);
        load_state_dict(net, path);
        QCOMPARE(values_of(net).at("fc2.weight"), std::vector<float>(8, 1.0f));  // rounded to fp16
        QCOMPARE(values_of(net).at("fc1.bias"), std::vector<float>(4, 0.5f));

        // Through the Trainer: the key is named.
        Experiment e;
        e.backend = "cpu";
        e.model.init_from = path + ".missing";
        e.dataset.kind = "blobs";
        const QString says = error_of([&] { Trainer tr(e, load_dataset(e.dataset, 1), make_backend("cpu", 0)); });
        QCOMPARE(says, QString::fromStdString("model.init_from: The safetensors file " + path + ".missing does not exist."));
    }

    // A batch norm's num_batches_tracked: optional, an integer scalar when present, not kept.
    void batchCountIsOptional() {
        ModelSpec m;
        m.kind = "layers";
        m.layers = R"([{"type":"batchnorm2d"},{"type":"flatten"},{"type":"linear","out":2}])";
        const ModelDesc desc = describe_model(m, SampleShape{2, 2, 2}, 2, false);
        CpuBackend be;
        Network net(be, desc, 2, 1, Fp8Recipe{}, fp32_formats(desc));
        QTemporaryDir dir;
        const std::string path = dir.path().toStdString() + "/bn.safetensors";
        std::vector<SafetensorsTensor> t = state_dict_tensors(net);
        QCOMPARE(t[4].name, std::string("bn1.num_batches_tracked"));
        QVERIFY(t[4].dtype == Dtype::I64);
        t[2] = safetensors_tensor("bn1.running_mean", Dtype::F32, {2}, std::vector<float>{0.25f, -0.5f});
        std::vector<SafetensorsTensor> without = t;
        without.erase(without.begin() + 4);
        write_safetensors(path, without);
        load_state_dict(net, path);
        QCOMPARE(values_of(net).at("bn1.running_mean"), (std::vector<float>{0.25f, -0.5f}));
        t[4] = safetensors_tensor("bn1.num_batches_tracked", Dtype::F32, {}, std::vector<float>{3});
        write_safetensors(path, t);
        QCOMPARE(error_of([&] { load_state_dict(net, path); }),
                 QString::fromStdString(path + ": tensor bn1.num_batches_tracked is F32; a batch count is a whole number "
                                               "(PyTorch writes it as an I64 scalar)."));
    }
};

QTEST_GUILESS_MAIN(TestSafetensors)
#include "test_safetensors.moc"
