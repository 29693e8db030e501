// Fuzz target: the IDX reader through gzip. The input is an IDX file (as for fuzz_idx); the target
// gzips it and reads both files, so the fuzzer explores IDX headers and data behind the gzip layer.
// The two must agree: the gzipped file is read exactly when the raw one is, to the same values
// (only the wording of a refusal may differ). Corpus: tests/fuzz/corpus/fuzz_idx_gz.
#include <zlib.h>

#include <optional>
#include <vector>

#include "data/idx_reader.h"
#include "error.h"
#include "fuzz_util.h"

namespace {

std::vector<std::uint8_t> gzip(const std::uint8_t* data, std::size_t size) {
    z_stream z{};
    if (deflateInit2(&z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) std::abort();
    std::vector<std::uint8_t> out(deflateBound(&z, size) + 32);
    z.next_in = const_cast<std::uint8_t*>(data);
    z.avail_in = static_cast<uInt>(size);
    z.next_out = out.data();
    z.avail_out = static_cast<uInt>(out.size());
    if (deflate(&z, Z_FINISH) != Z_STREAM_END) std::abort();
    out.resize(z.total_out);
    deflateEnd(&z);
    return out;
}

template <class Read>
auto attempt(Read read) -> std::optional<decltype(read())> {
    try {
        return read();
    } catch (const mantissa::Error& e) {
        fuzz::check_sentence(e.what());
        return std::nullopt;
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    // A raw file that starts like gzip would be read as gzip: not the case this target is for.
    if (size >= 2 && data[0] == 0x1F && data[1] == 0x8B) return -1;
    const std::string raw = fuzz::write_input("raw-idx3-ubyte", data, size);
    const std::vector<std::uint8_t> packed = gzip(data, size);
    const std::string gz = fuzz::write_input("gz-idx3-ubyte.gz", packed.data(), packed.size());

    const auto raw_images = attempt([&] { return mantissa::data::read_idx_images(raw).pixels; });
    const auto gz_images = attempt([&] { return mantissa::data::read_idx_images(gz).pixels; });
    if (raw_images.has_value() != gz_images.has_value() || (raw_images && *raw_images != *gz_images))
        fuzz::fail("the raw and the gzipped image file read differently");
    const auto raw_labels = attempt([&] { return mantissa::data::read_idx_labels(raw, 10); });
    const auto gz_labels = attempt([&] { return mantissa::data::read_idx_labels(gz, 10); });
    if (raw_labels.has_value() != gz_labels.has_value() || (raw_labels && *raw_labels != *gz_labels))
        fuzz::fail("the raw and the gzipped label file read differently");
    return 0;
}
