// Fuzz target: the CIFAR-10 reader, the input being one batch file. read_cifar_batch either reads it
// exactly (a positive whole number of 3073-byte records: each label the record's first byte, 0..9,
// each pixel its byte / 255) or throws mantissa::Error with one sentence. Then the input stands for
// one of a folder's six files (which one: the input's size mod 6), the other five valid one-record
// files, and load_dataset (kind cifar10, normalised or not) must agree: it succeeds exactly when the
// batch was read, with the rows of all six, shape 3 x 32 x 32 and finite values.
// Corpus: tests/fuzz/corpus/fuzz_cifar (docs/fuzzing.md).
#include <cmath>

#include "data/cifar_reader.h"
#include "data/dataset.h"
#include "error.h"
#include "fuzz_util.h"

namespace {

constexpr std::size_t kRecord = 3073;

// A valid one-record batch file: label 3, pixel k = k % 251.
const std::string& valid_record() {
    static const std::string bytes = [] {
        std::string b(kRecord, '\0');
        b[0] = 3;
        for (std::size_t k = 1; k < kRecord; ++k) b[k] = static_cast<char>((k - 1) % 251);
        return b;
    }();
    return bytes;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    namespace md = mantissa::data;
    const std::string path = fuzz::write_input("batch.bin", data, size);
    bool read = false;
    try {
        const md::CifarBatch batch = md::read_cifar_batch(path);
        read = true;
        const auto count = static_cast<std::size_t>(batch.count);
        if (count == 0 || size != count * kRecord) fuzz::fail("a batch whose record count does not match its size");
        if (batch.labels.size() != count || batch.pixels.size() != count * (kRecord - 1))
            fuzz::fail("a batch whose sizes do not match");
        for (std::size_t r = 0; r < count; ++r) {
            const std::uint8_t* rec = data + r * kRecord;
            if (rec[0] > 9 || batch.labels[r] != rec[0]) fuzz::fail("a label that is not the record's first byte");
            for (std::size_t k = 0; k + 1 < kRecord; ++k)
                if (batch.pixels[r * (kRecord - 1) + k] != static_cast<float>(rec[1 + k]) / 255.0f)
                    fuzz::fail("a pixel that is not its byte / 255");
        }
    } catch (const mantissa::Error& e) {
        fuzz::check_sentence(e.what());
    }

    // The input as one file of a folder whose other five files are valid.
    const std::size_t which = size % 6;
    const std::string folder = fuzz::scratch() + "/cifar";
    std::filesystem::create_directories(folder);
    for (std::size_t i = 0; i < 6; ++i) {
        const std::string name = std::string("cifar/") + md::kCifarFiles[i];
        if (i == which)
            fuzz::write_input(name, data, size);
        else
            fuzz::write_input(name, reinterpret_cast<const std::uint8_t*>(valid_record().data()), kRecord);
    }
    mantissa::DatasetSpec spec;
    spec.kind = "cifar10";
    spec.path = folder;
    spec.normalize = (size / 6) % 2 == 0;
    try {
        const mantissa::Dataset d = mantissa::load_dataset(spec, 1);
        if (!read) fuzz::fail("a folder read whose batch was refused");
        const std::int64_t records = static_cast<std::int64_t>(size / kRecord);
        const std::int64_t train = which == 5 ? 5 : 4 + records, test = which == 5 ? records : 1;
        if (d.train.rows != train || d.test.rows != test) fuzz::fail("splits of the wrong size");
        if (!(d.shape == mantissa::SampleShape{3, 32, 32}) || d.features != 3072 || d.classes != 10)
            fuzz::fail("a dataset of the wrong shape");
        for (const mantissa::Split* s : {&d.train, &d.test}) {
            if (s->x.size() != static_cast<std::size_t>(s->rows) * 3072 ||
                s->y.size() != static_cast<std::size_t>(s->rows))
                fuzz::fail("a split whose sizes do not match");
            for (float v : s->x)
                if (!std::isfinite(v)) fuzz::fail("a value that is not finite");
        }
    } catch (const mantissa::Error& e) {
        if (read) fuzz::fail("a folder refused whose batch was read", e.what());
        fuzz::check_sentence(e.what());
    }
    return 0;
}
