// Fuzz target: the CSV reader (parse_csv, then csv_to_table), the input being the file's text; its
// first byte picks the label column (-2..5). A result holds at least 2 rows of finite numbers within
// the FP32 range; a refusal is mantissa::Error with one sentence, quoted bytes escaped.
// Corpus: tests/fuzz/corpus/fuzz_csv (docs/fuzzing.md).
#include <cfloat>
#include <cmath>

#include "data/csv_reader.h"
#include "error.h"
#include "fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size == 0) return 0;
    const int label_column = static_cast<int>(data[0] % 8) - 2;
    const std::string text(reinterpret_cast<const char*>(data + 1), size - 1);
    try {
        mantissa::data::CsvData csv = mantissa::data::parse_csv("fuzz.csv", text, label_column);
        if (csv.rows < 2 || csv.features < 1 ||
            csv.x.size() != static_cast<std::size_t>(csv.rows) * static_cast<std::size_t>(csv.features) ||
            csv.labels.size() != static_cast<std::size_t>(csv.rows))
            fuzz::fail("a table whose sizes do not match");
        for (float v : csv.x)
            if (!std::isfinite(v)) fuzz::fail("a feature that is not finite");
        for (double v : csv.labels)
            if (!std::isfinite(v) || std::abs(v) > FLT_MAX) fuzz::fail("a label outside the FP32 range");
        std::vector<std::string> notices;
        const mantissa::data::Table table = mantissa::data::csv_to_table(std::move(csv), "fuzz.csv", notices);
        if (notices.size() != 1) fuzz::fail("not one notice");
        fuzz::check_sentence(notices[0]);
        if (table.classes != 0 && (table.classes < 2 || table.y.size() != static_cast<std::size_t>(table.rows)))
            fuzz::fail("a classification table out of shape");
    } catch (const mantissa::Error& e) {
        fuzz::check_sentence(e.what());
    }
    return 0;
}
