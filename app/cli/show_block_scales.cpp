// The block-scale section of `mantissa-cli show` (show_block_scales.h): a table in columns
// counted in characters (the bars are UTF-8), names escaped as the rest of show escapes them.
#include "cli/show_block_scales.h"

#include <algorithm>
#include <array>
#include <cstdio>
#include <string>
#include <vector>

#include "numeric/block_format.h"
#include "store/run_text.h"

namespace mantissa::cli {

namespace {

using ojson = nlohmann::ordered_json;

// A distribution wider than this many exponents is drawn with several exponents a character.
constexpr std::size_t bar_width = 48;

std::size_t chars_of(const std::string& s) {
    std::size_t n = 0;
    for (unsigned char c : s) n += (c & 0xC0) != 0x80;
    return n;
}

// `s` padded with spaces to `width` characters (printf pads bytes, which misaligns UTF-8).
std::string pad(const std::string& s, std::size_t width) {
    const std::size_t n = chars_of(s);
    return n >= width ? s : s + std::string(width - n, ' ');
}

std::string pad_left(const std::string& s, std::size_t width) {
    const std::size_t n = chars_of(s);
    return n >= width ? s : std::string(width - n, ' ') + s;
}

// A stored name for the table: escaped (store/run_text.h), at most 32 characters.
std::string name_text(const std::string& name) {
    std::string s = store::printable_text(name);
    if (chars_of(s) <= 32) return s;
    std::size_t i = 0;
    for (std::size_t c = 0; i < s.size(); ++i)
        if ((static_cast<unsigned char>(s[i]) & 0xC0) != 0x80 && c++ == 29) break;
    return s.substr(0, i) + "...";
}

// The distribution as one character per exponent from the smallest to the largest: U+2581..U+2588
// by its count against the tallest (any block at all shows), a space where no block has it.
// Wider than bar_width exponents, neighbouring exponents share a character (*per_char of them).
std::string bar(const BlockScaleHistogram& h, std::size_t* per_char) {
    static constexpr std::array<const char*, 8> levels = {"\u2581", "\u2582", "\u2583", "\u2584",
                                                          "\u2585", "\u2586", "\u2587", "\u2588"};
    *per_char = std::max<std::size_t>(1, (h.counts.size() + bar_width - 1) / bar_width);
    std::vector<std::int64_t> cells;
    for (std::size_t i = 0; i < h.counts.size(); i += *per_char) {
        std::int64_t sum = 0;
        for (std::size_t j = i; j < std::min(h.counts.size(), i + *per_char); ++j) sum += h.counts[j];
        cells.push_back(sum);
    }
    const std::int64_t tallest = cells.empty() ? 0 : *std::max_element(cells.begin(), cells.end());
    std::string out;
    for (std::int64_t c : cells) {
        if (c == 0) {
            out += ' ';
            continue;
        }
        const auto level = static_cast<std::size_t>((c * 8 + tallest - 1) / tallest);  // 1..8
        out += levels[level - 1];
    }
    return out;
}

// The cells of one row of the table.
struct Line {
    std::string layer, operand, format, blocks, range, median, zeros, nans, bar;
};

Line line_of(const BlockScaleRecord& r, bool first_of_layer, std::size_t* widest_per_char) {
    const BlockScaleHistogram h = block_scale_histogram(r);
    Line l;
    l.layer = first_of_layer ? name_text(r.name) : "";
    l.operand = matmul_operand_name(r.operand);
    l.format = std::string(block_format_name(r.format)) + (r.own ? "*" : "");
    l.blocks = std::to_string(h.blocks());
    if (r.rows < r.rows_total)
        l.blocks += " (" + std::to_string(r.rows) + " of " + std::to_string(r.rows_total) + " rows)";
    if (h.counts.empty()) {
        l.range = l.median = "-";
    } else {
        l.range = std::to_string(h.min_exponent) + ".." + std::to_string(h.max_exponent());
        l.median = std::to_string(h.median_exponent());
        std::size_t per_char = 1;
        l.bar = bar(h, &per_char);
        *widest_per_char = std::max(*widest_per_char, per_char);
    }
    l.zeros = std::to_string(h.zero_blocks);
    l.nans = std::to_string(h.nan_blocks);
    return l;
}

}  // namespace

void print_block_scales(const std::vector<BlockScaleRecord>& step_rows) {
    if (step_rows.empty()) return;
    std::size_t per_char = 1;
    std::vector<Line> lines;
    for (std::size_t i = 0; i < step_rows.size(); ++i) {
        const bool first = i == 0 || step_rows[i].layer != step_rows[i - 1].layer;
        lines.push_back(line_of(step_rows[i], first, &per_char));
    }
    const Line head{"layer", "operand", "format", "blocks", "exponents", "median", "zero", "NaN", "distribution"};
    std::array<std::size_t, 8> width{};  // of each column but the last, in characters
    auto widen = [&](const Line& l) {
        const std::array<const std::string*, 8> cells = {&l.layer, &l.operand, &l.format, &l.blocks,
                                                         &l.range, &l.median,  &l.zeros,  &l.nans};
        for (std::size_t c = 0; c < cells.size(); ++c) width[c] = std::max(width[c], chars_of(*cells[c]));
    };
    widen(head);
    for (const Line& l : lines) widen(l);
    auto print = [&](const Line& l) {
        std::string text = "  " + pad(l.layer, width[0]) + "  " + pad(l.operand, width[1]) + "  " +
                           pad(l.format, width[2]) + "  " + pad(l.blocks, width[3]) + "  " +
                           pad_left(l.range, width[4]) + "  " + pad_left(l.median, width[5]) + "  " +
                           pad_left(l.zeros, width[6]) + "  " + pad_left(l.nans, width[7]) + "  " + l.bar;
        while (!text.empty() && text.back() == ' ') text.pop_back();
        std::printf("%s\n", text.c_str());
    };
    std::printf("\nBlock scales at step %lld: the power of two of each block's scale (* the layer's own format)\n",
                static_cast<long long>(step_rows.front().step));
    print(head);
    for (const Line& l : lines) print(l);
    if (per_char > 1)
        std::printf("  (a distribution wider than %zu exponents is drawn with several a character: up to %zu)\n",
                    bar_width, per_char);
}

ojson block_scales_json(const std::vector<BlockScaleRecord>& step_rows) {
    if (step_rows.empty()) return nullptr;
    ojson rows = ojson::array();
    for (const BlockScaleRecord& r : step_rows) {
        const BlockScaleHistogram h = block_scale_histogram(r);
        const bool finite = !h.counts.empty();
        ojson histogram = ojson::array();  // the exponents some block has, smallest first
        for (std::size_t i = 0; i < h.counts.size(); ++i)
            if (h.counts[i] > 0)
                histogram.push_back({{"exponent", h.min_exponent + static_cast<int>(i)}, {"blocks", h.counts[i]}});
        rows.push_back({{"layer", r.name},
                        {"operand", matmul_operand_name(r.operand)},
                        {"format", std::string(block_format_name(r.format))},
                        {"own", r.own},
                        {"rows_total", r.rows_total},
                        {"rows", r.rows},
                        {"row_length", r.row_length},
                        {"blocks_per_row", r.blocks_per_row},
                        {"blocks", h.blocks()},
                        {"zero_blocks", h.zero_blocks},
                        {"nan_blocks", h.nan_blocks},
                        {"min_exponent", finite ? ojson(h.min_exponent) : ojson(nullptr)},
                        {"median_exponent", finite ? ojson(h.median_exponent()) : ojson(nullptr)},
                        {"max_exponent", finite ? ojson(h.max_exponent()) : ojson(nullptr)},
                        {"histogram", std::move(histogram)}});
    }
    return {{"step", step_rows.front().step}, {"rows", std::move(rows)}};
}

}  // namespace mantissa::cli
