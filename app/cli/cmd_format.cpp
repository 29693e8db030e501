// `mantissa-cli format`: how each value is stored in each precision format, exactly.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <optional>
#include <sstream>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/cli_common.h"
#include "numeric/describe.h"
#include "numeric/describe_block.h"

namespace mantissa::cli {
namespace {

// A format a value can be shown in: a tensor format (with its inf and NaN), or one of the
// block-scaled formats' narrow elements taken alone, without a scale (fp6, fp4: saturating).
struct Target {
    std::optional<Format> tensor;
    ElementFormat element = ElementFormat::fp4_e2m1;
};

constexpr ElementFormat bare_elements[] = {ElementFormat::fp6_e3m2, ElementFormat::fp6_e2m3, ElementFormat::fp4_e2m1};

std::vector<Target> all_targets() {
    std::vector<Target> out;
    for (Format f : all_formats) out.push_back({f});
    for (ElementFormat e : bare_elements) out.push_back({std::nullopt, e});
    return out;
}

std::vector<Target> parse_format_list(const std::string& list) {
    std::vector<Target> out;
    std::stringstream ss(list);
    std::string name;
    while (std::getline(ss, name, ',')) {
        if (name.empty()) continue;
        if (auto f = parse_format(name)) {  // fp8 names are the tensor formats
            out.push_back({*f});
            continue;
        }
        const auto e = parse_element_format(name);
        if (!e)
            throw UsageError{"unknown format '" + name + "'; known formats: " + std::string(format_names_list()) +
                             ", fp6-e3m2, fp6-e2m3, fp4-e2m1"};
        out.push_back({std::nullopt, *e});
    }
    if (out.empty()) throw UsageError{"--to needs at least one format name"};
    return out;
}

// One line of the table: a value in one format, from describe_stored or describe_element.
struct Shown {
    std::string format, hex, fields, exact, cls;
    float value = 0;
    double abs_error = 0, rel_error = 0;
    bool overflowed = false, flushed_to_zero = false;
};

Shown show(const Target& t, float x, Overflow overflow) {
    Shown s;
    if (t.tensor) {
        const StoredValue v = describe_stored(*t.tensor, x, overflow);
        s = {std::string(format_name(*t.tensor)), v.hex, v.sign_bits + "|" + v.exponent_bits + "|" + v.mantissa_bits,
             v.exact, float_class_name(v.cls), v.value, v.abs_error, v.rel_error, v.overflowed, v.flushed_to_zero};
        return s;
    }
    const DescribedElement e = describe_element(t.element, x);
    s = {std::string(element_format_name(t.element)), e.hex, e.sign_bits + "|" + e.exponent_bits + "|" + e.mantissa_bits,
         exact_decimal(e.value), float_class_name(e.cls), e.value, e.abs_error, e.rel_error, e.saturated,
         e.flushed_to_zero};
    return s;
}

nlohmann::ordered_json number_or_word(double v) {
    if (std::isnan(v)) return "nan";
    if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
    return v;
}

std::string fmt_error(double e) {
    if (std::isnan(e)) return "-";
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.3g", e);
    return buf;
}

nlohmann::ordered_json optional_error(double e) {
    return std::isnan(e) ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(e);
}

// `--block FORMAT`: the values as consecutive blocks of the format, each shown with the scale its
// values share and what each element stores (describe_block, the code the format explorer shows).
int run_block_format(const std::string& name, const std::vector<std::pair<std::string, float>>& values, bool json) {
    const auto format = parse_block_format(name);
    if (!format)
        throw UsageError{"unknown block format '" + name + "'; known block formats: " +
                         std::string(block_format_names_list())};
    const BlockFormatInfo& info = block_format_info(*format);
    // NVFP4's tensor scale comes from every value given: they are one tensor.
    float tensor_amax = 0;
    for (const auto& v : values)
        if (std::isfinite(v.second)) tensor_amax = std::max(tensor_amax, std::abs(v.second));
    nlohmann::ordered_json blocks = nlohmann::ordered_json::array();
    const std::size_t size = static_cast<std::size_t>(info.block_size);
    for (std::size_t start = 0; start < values.size(); start += size) {
        const std::size_t n = std::min(size, values.size() - start);
        std::vector<float> x(n);
        for (std::size_t i = 0; i < n; ++i) x[i] = values[start + i].second;
        const BlockDescription d = describe_block(*format, x.data(), n,
                                                  info.scale == ScaleKind::e4m3_with_tensor_scale
                                                      ? std::optional<float>(tensor_amax)
                                                      : std::nullopt);
        if (json) {
            nlohmann::ordered_json elements = nlohmann::ordered_json::array();
            for (std::size_t i = 0; i < n; ++i) {
                const DescribedElement& e = d.elements[i];
                elements.push_back({{"input", values[start + i].first},
                                    {"bits", e.hex},
                                    {"binary", e.sign_bits + "|" + e.exponent_bits + "|" + e.mantissa_bits},
                                    {"element", number_or_word(e.element_value)},
                                    {"value", number_or_word(e.value)},
                                    {"exact", exact_decimal(e.value)},
                                    {"abs_error", optional_error(e.abs_error)},
                                    {"rel_error", optional_error(e.rel_error)},
                                    {"saturated", e.saturated},
                                    {"flushed_to_zero", e.flushed_to_zero}});
            }
            blocks.push_back({{"first", start},
                              {"amax", number_or_word(d.amax)},
                              {"nan_block", d.nan_block},
                              {"scale_bits", d.scale_hex},
                              {"scale_binary", d.scale_bits},
                              {"scale", number_or_word(d.scale_value)},
                              {"tensor_scale", number_or_word(d.tensor_scale)},
                              {"decode_factor", number_or_word(d.decode_factor)},
                              {"elements", std::move(elements)}});
            continue;
        }
        if (start) std::cout << "\n";
        // d.amax is of the finite values: said so where the block holds an inf or a NaN.
        std::printf("%s block of values %zu to %zu (%d per block; %.2f bits a value): amax %s%s\n",
                    std::string(info.name).c_str(), start + 1, start + n, info.block_size, info.bits_per_value,
                    exact_decimal(d.amax).c_str(), d.nan_block ? " (of its finite values)" : "");
        if (info.scale == ScaleKind::e8m0)
            std::printf("  shared scale  E8M0 %s (%s) = 2^%d%s\n", d.scale_hex.c_str(), d.scale_bits.c_str(),
                        d.scale_exponent, d.nan_block ? " NaN: the block holds a NaN or inf" : "");
        else
            std::printf("  block scale   E4M3 %s (%s) = %s, tensor scale %s: each element times %s%s\n",
                        d.scale_hex.c_str(), d.scale_bits.c_str(), exact_decimal(d.scale_value).c_str(),
                        exact_decimal(d.tensor_scale).c_str(), exact_decimal(d.decode_factor).c_str(),
                        d.nan_block ? " (NaN: the block holds a NaN or inf)" : "");
        std::printf("  %-14s %-6s %-12s %-10s %-9s %-9s %s\n", "input", "bits", "s|e|m", "element", "abs err",
                    "rel err", "stored value");
        for (std::size_t i = 0; i < n; ++i) {
            const DescribedElement& e = d.elements[i];
            std::string note;
            if (e.saturated) note = "  (saturated)";
            if (e.flushed_to_zero) note = "  (flushed to zero)";
            std::printf("  %-14s %-6s %-12s %-10s %-9s %-9s %s%s\n", values[start + i].first.c_str(), e.hex.c_str(),
                        (e.sign_bits + "|" + e.exponent_bits + "|" + e.mantissa_bits).c_str(),
                        exact_decimal(e.element_value).c_str(), fmt_error(e.abs_error).c_str(),
                        fmt_error(e.rel_error).c_str(), exact_decimal(e.value).c_str(), note.c_str());
        }
    }
    if (json) std::cout << blocks.dump(2) << "\n";
    return exit_ok;
}

int run_format(Args& args) {
    args.flag("json");
    args.flag("saturate");
    args.option("to");
    args.option("block");
    args.parse();
    if (args.has("block") && (args.has("to") || args.has("saturate")))
        throw UsageError{"--block shows one block format on its own: leave out --to and --saturate "
                         "(a block-scaled format always saturates)"};
    std::vector<Target> formats = all_targets();
    if (auto to = args.value("to")) formats = parse_format_list(*to);
    const Overflow overflow = args.has("saturate") ? Overflow::saturate : Overflow::to_inf;
    if (args.positional().empty()) throw UsageError{"give at least one value, e.g. 'mantissa-cli format 0.1'"};

    std::vector<std::pair<std::string, float>> values;
    for (const auto& text : args.positional()) {
        auto v = parse_fp32(text);
        if (!v) throw UsageError{"'" + text + "' is not a number (use decimal, hex float like 0x1.8p3, inf, -inf or nan)"};
        values.emplace_back(text, *v);
    }
    if (auto block = args.value("block")) return run_block_format(*block, values, args.has("json"));

    if (args.has("json")) {
        nlohmann::ordered_json out = nlohmann::ordered_json::array();
        for (const auto& [text, x] : values) {
            nlohmann::ordered_json results = nlohmann::ordered_json::array();
            for (const Target& t : formats) {
                const Shown s = show(t, x, overflow);
                results.push_back({{"format", s.format},
                                   {"bits", s.hex},
                                   {"binary", s.fields},
                                   {"value", number_or_word(s.value)},
                                   {"exact", s.exact},
                                   {"class", s.cls},
                                   {"abs_error", optional_error(s.abs_error)},
                                   {"rel_error", optional_error(s.rel_error)},
                                   {"overflow", s.overflowed},
                                   {"flushed_to_zero", s.flushed_to_zero}});
            }
            out.push_back({{"input", text},
                           {"fp32_bits", describe_stored(Format::fp32, x).hex},
                           {"results", std::move(results)}});
        }
        std::cout << out.dump(2) << "\n";
        return exit_ok;
    }

    for (std::size_t i = 0; i < values.size(); ++i) {
        const auto& [text, x] = values[i];
        if (i) std::cout << "\n";
        std::cout << text << " -> fp32 " << describe_stored(Format::fp32, x).hex << " = " << exact_decimal(x) << "\n";
        std::printf("  %-9s %-10s %-36s %-10s %-9s %-9s %s\n", "format", "bits", "sign|exponent|mantissa", "class",
                    "abs err", "rel err", "stored value");
        for (const Target& t : formats) {
            const Shown s = show(t, x, overflow);
            std::string note;
            if (s.overflowed)
                note = overflow == Overflow::saturate || !t.tensor ? "  (overflow: saturated)" : "  (overflow)";
            if (s.flushed_to_zero) note = "  (flushed to zero)";
            if (!t.tensor && std::isnan(x)) note = "  (no NaN in this format: stored as zero)";
            std::printf("  %-9s %-10s %-36s %-10s %-9s %-9s %s%s\n", s.format.c_str(), s.hex.c_str(), s.fields.c_str(),
                        s.cls.c_str(), fmt_error(s.abs_error).c_str(), fmt_error(s.rel_error).c_str(), s.exact.c_str(),
                        note.c_str());
        }
    }
    return exit_ok;
}

}  // namespace

MANTISSA_CLI_COMMAND({"format", "show how values are stored in each precision format",
                      "usage: mantissa-cli format [--to LIST] [--saturate] [--json] VALUE...\n"
                      "       mantissa-cli format --block FORMAT [--json] VALUE...\n\n"
                      "Parses each VALUE (decimal, hex float such as 0x1.8p3, inf, -inf, nan) to the nearest fp32,\n"
                      "as an fp32 tensor would hold it, then shows it stored in each format: the bits, as\n"
                      "sign|exponent|mantissa, the class, the absolute and relative rounding error, the exact\n"
                      "stored value, and whether it overflowed or was flushed to zero.\n\n"
                      "  --to LIST     comma-separated formats (default: all): fp32, tf32, fp16, bf16,\n"
                      "                fp8-e4m3, fp8-e5m2, and the block formats' elements taken alone,\n"
                      "                without a scale: fp6-e3m2, fp6-e2m3, fp4-e2m1 (no inf, no NaN: they\n"
                      "                saturate, and a NaN is stored as zero)\n"
                      "  --saturate    out-of-range values become the largest finite value (scaled FP8 paths)\n"
                      "                instead of inf (or NaN for fp8-e4m3)\n"
                      "  --block FORMAT  the values as consecutive blocks of a block-scaled format (mxfp8-e4m3,\n"
                      "                mxfp8-e5m2, mxfp6-e3m2, mxfp6-e2m3, mxfp4, nvfp4): each block's shared\n"
                      "                scale, and each element's bits, value before and after the scale, and\n"
                      "                error; for nvfp4 the values are one tensor, whose amax sets its scale\n"
                      "  --json        print a JSON array, one object per value (per block with --block)\n\n"
                      "Exit status: 0 ok, 2 a value that is not a number, an unknown format, or an output\n"
                      "that cannot be written.\n",
                      run_format});

}  // namespace mantissa::cli
