#include "cli/show_what_if.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>

namespace mantissa::cli {

namespace {

using ojson = nlohmann::ordered_json;

std::string sqnr_text(double db) {
    if (std::isnan(db)) return "-";
    if (std::isinf(db)) return db > 0 ? "exact" : "overflow";
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.1f", db);
    return buf;
}

std::string percent_text(double f) {
    char buf[32];
    if (f == 0) return "0";
    std::snprintf(buf, sizeof buf, f < 0.001 ? "%.3f" : "%.2f", 100 * f);
    return buf;
}

ojson number_or_word(double v) {
    if (std::isnan(v)) return "nan";
    if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
    return v;
}

ojson stats_json(const QuantisationStats& s) {
    return {{"underflow", s.underflow}, {"saturation", s.saturation}, {"sqnr_db", number_or_word(s.sqnr_db)},
            {"values", s.values}};
}

// The formats in the order the rows give them, and the layers in model order.
struct Axes {
    std::vector<ComputeFormat> formats;
    std::vector<std::pair<int, std::string>> layers;
};

Axes axes_of(const std::vector<WhatIfRecord>& rows) {
    Axes a;
    for (const WhatIfRecord& r : rows) {
        if (std::find(a.formats.begin(), a.formats.end(), r.format) == a.formats.end()) a.formats.push_back(r.format);
        const std::pair<int, std::string> layer{r.layer, r.name};
        if (std::find(a.layers.begin(), a.layers.end(), layer) == a.layers.end()) a.layers.push_back(layer);
    }
    std::sort(a.layers.begin(), a.layers.end());
    return a;
}

const WhatIfRecord* find_row(const std::vector<WhatIfRecord>& rows, int layer, const ComputeFormat& f) {
    for (const WhatIfRecord& r : rows)
        if (r.layer == layer && r.format == f) return &r;
    return nullptr;
}

template <class Cell>
void print_table(const std::vector<WhatIfRecord>& rows, const Axes& axes, const std::vector<LayerStepRecord>& layers,
                 Cell cell) {
    std::size_t name_width = 6;
    for (const auto& [index, name] : axes.layers) name_width = std::max(name_width, std::min<std::size_t>(name.size() + 3, 36));
    std::vector<std::size_t> widths;
    for (const ComputeFormat& f : axes.formats) {
        std::size_t w = f.name().size() + 1;
        for (const auto& [index, name] : axes.layers)
            if (const WhatIfRecord* r = find_row(rows, index, f))
                for (const QuantisationStats* s : {&r->input, &r->weight, &r->grad_output}) w = std::max(w, cell(*s).size());
        widths.push_back(w);
    }
    std::printf("  %-*s", static_cast<int>(name_width), "layer");
    for (std::size_t i = 0; i < axes.formats.size(); ++i)
        std::printf("  %*s", static_cast<int>(widths[i]), std::string(axes.formats[i].name()).c_str());
    std::printf("\n");
    for (const auto& [index, name] : axes.layers) {
        const auto ran = std::find_if(layers.begin(), layers.end(), [&](const LayerStepRecord& l) { return l.layer == index; });
        const char* tensors[] = {"x", "W", "dy"};
        for (int t = 0; t < 3; ++t) {
            const std::string label = (t == 0 ? name : std::string(name.size(), ' ')) + " " + tensors[t];
            std::printf("  %-*s", static_cast<int>(name_width), label.c_str());
            for (std::size_t i = 0; i < axes.formats.size(); ++i) {
                const WhatIfRecord* r = find_row(rows, index, axes.formats[i]);
                std::string text = "";
                if (r) text = cell(t == 0 ? r->input : t == 1 ? r->weight : r->grad_output);
                if (r && ran != layers.end() && ran->precision == axes.formats[i]) text += "*";
                std::printf("  %*s", static_cast<int>(widths[i]), text.c_str());
            }
            std::printf("\n");
        }
    }
}

}  // namespace

std::vector<WhatIfRecord> last_what_if_step(const std::vector<WhatIfRecord>& rows) {
    if (rows.empty()) return {};
    const std::int64_t last = rows.back().step;
    std::vector<WhatIfRecord> out;
    for (const WhatIfRecord& r : rows)
        if (r.step == last) out.push_back(r);
    return out;
}

void print_what_if(const std::vector<WhatIfRecord>& step_rows, const std::vector<LayerStepRecord>& layers) {
    if (step_rows.empty()) return;
    const Axes axes = axes_of(step_rows);
    const long long step = static_cast<long long>(step_rows.front().step);
    std::printf("\nWhat-if at step %lld: SQNR in dB of each operand in each format (* the layer's own format)\n", step);
    print_table(step_rows, axes, layers, [](const QuantisationStats& s) { return sqnr_text(s.sqnr_db); });
    std::printf("\nWhat-if at step %lld: %% underflowing to zero / %% saturating\n", step);
    print_table(step_rows, axes, layers, [](const QuantisationStats& s) {
        return percent_text(s.underflow) + "/" + percent_text(s.saturation);
    });
}

ojson what_if_json(const std::vector<WhatIfRecord>& step_rows) {
    if (step_rows.empty()) return nullptr;
    ojson rows = ojson::array();
    for (const WhatIfRecord& r : step_rows)
        rows.push_back({{"layer", r.name},
                        {"format", std::string(r.format.name())},
                        {"x", stats_json(r.input)},
                        {"w", stats_json(r.weight)},
                        {"dy", stats_json(r.grad_output)}});
    return {{"step", step_rows.front().step}, {"rows", std::move(rows)}};
}

}  // namespace mantissa::cli
