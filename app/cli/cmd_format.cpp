// `mantissa-cli format`: how each value is stored in each precision format, exactly.
#include <cmath>
#include <cstdio>
#include <iostream>
#include <sstream>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/cli_common.h"
#include "numeric/describe.h"

namespace mantissa::cli {
namespace {

std::vector<Format> parse_format_list(const std::string& list) {
    std::vector<Format> out;
    std::stringstream ss(list);
    std::string name;
    while (std::getline(ss, name, ',')) {
        if (name.empty()) continue;
        auto f = parse_format(name);
        if (!f) throw UsageError{"unknown format '" + name + "'; known formats: " + std::string(format_names_list())};
        out.push_back(*f);
    }
    if (out.empty()) throw UsageError{"--to needs at least one format name"};
    return out;
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

int run_format(Args& args) {
    args.flag("json");
    args.flag("saturate");
    args.option("to");
    args.parse();
    std::vector<Format> formats(all_formats.begin(), all_formats.end());
    if (auto to = args.value("to")) formats = parse_format_list(*to);
    const Overflow overflow = args.has("saturate") ? Overflow::saturate : Overflow::to_inf;
    if (args.positional().empty()) throw UsageError{"give at least one value, e.g. 'mantissa-cli format 0.1'"};

    std::vector<std::pair<std::string, float>> values;
    for (const auto& text : args.positional()) {
        auto v = parse_fp32(text);
        if (!v) throw UsageError{"'" + text + "' is not a number (use decimal, hex float like 0x1.8p3, inf, -inf or nan)"};
        values.emplace_back(text, *v);
    }

    if (args.has("json")) {
        nlohmann::ordered_json out = nlohmann::ordered_json::array();
        for (const auto& [text, x] : values) {
            nlohmann::ordered_json results = nlohmann::ordered_json::array();
            for (Format f : formats) {
                const StoredValue s = describe_stored(f, x, overflow);
                results.push_back({{"format", std::string(format_name(f))},
                                   {"bits", s.hex},
                                   {"binary", s.sign_bits + "|" + s.exponent_bits + "|" + s.mantissa_bits},
                                   {"value", number_or_word(s.value)},
                                   {"exact", s.exact},
                                   {"class", float_class_name(s.cls)},
                                   {"abs_error", std::isnan(s.abs_error) ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(s.abs_error)},
                                   {"rel_error", std::isnan(s.rel_error) ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(s.rel_error)},
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
        for (Format f : formats) {
            const StoredValue s = describe_stored(f, x, overflow);
            std::string note;
            if (s.overflowed) note = overflow == Overflow::saturate ? "  (overflow: saturated)" : "  (overflow)";
            if (s.flushed_to_zero) note = "  (flushed to zero)";
            std::printf("  %-9s %-10s %-36s %-10s %-9s %-9s %s%s\n", std::string(format_name(f)).c_str(), s.hex.c_str(),
                        (s.sign_bits + "|" + s.exponent_bits + "|" + s.mantissa_bits).c_str(), float_class_name(s.cls),
                        fmt_error(s.abs_error).c_str(), fmt_error(s.rel_error).c_str(), s.exact.c_str(), note.c_str());
        }
    }
    return exit_ok;
}

}  // namespace

MANTISSA_CLI_COMMAND({"format", "show how values are stored in each precision format",
                      "usage: mantissa-cli format [--to LIST] [--saturate] [--json] VALUE...\n\n"
                      "Parses each VALUE (decimal, hex float such as 0x1.8p3, inf, -inf, nan) to the nearest fp32,\n"
                      "as an fp32 tensor would hold it, then shows it stored in each format: the bits, as\n"
                      "sign|exponent|mantissa, the class, the absolute and relative rounding error, the exact\n"
                      "stored value, and whether it overflowed or was flushed to zero.\n\n"
                      "  --to LIST     comma-separated formats (default: all): fp32, tf32, fp16, bf16,\n"
                      "                fp8-e4m3, fp8-e5m2\n"
                      "  --saturate    out-of-range values become the largest finite value (scaled FP8 paths)\n"
                      "                instead of inf (or NaN for fp8-e4m3)\n"
                      "  --json        print a JSON array, one object per value\n",
                      run_format});

}  // namespace mantissa::cli
