// Fuzz target: the IDX reader on a raw (or, when the input starts with the gzip magic, gzipped)
// file: read_idx_images and read_idx_labels on the input as it is. Either reads without a
// sanitizer report, and either succeeds with data that matches its header or throws
// mantissa::Error with one sentence. Corpus: tests/fuzz/corpus/fuzz_idx (docs/fuzzing.md).
#include <cmath>

#include "data/idx_reader.h"
#include "error.h"
#include "fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string path = fuzz::write_input("input-idx3-ubyte", data, size);
    try {
        const mantissa::data::IdxImages images = mantissa::data::read_idx_images(path);
        if (images.count < 1 || images.rows < 1 || images.cols < 1 ||
            images.pixels.size() != static_cast<std::size_t>(images.count) * static_cast<std::size_t>(images.rows) *
                                        static_cast<std::size_t>(images.cols))
            fuzz::fail("images that do not match their header");
        for (float p : images.pixels)
            if (!(p >= 0.0f && p <= 1.0f)) fuzz::fail("a pixel outside [0, 1]");
    } catch (const mantissa::Error& e) {
        fuzz::check_sentence(e.what());
    }
    try {
        const std::vector<std::int32_t> labels = mantissa::data::read_idx_labels(path, 10);
        if (labels.empty()) fuzz::fail("no labels, yet no error");
        for (std::int32_t l : labels)
            if (l < 0 || l >= 10) fuzz::fail("a label outside 0..9");
    } catch (const mantissa::Error& e) {
        fuzz::check_sentence(e.what());
    }
    return 0;
}
