// Fuzz target: gzip inflation (data/gzip_input), the input being the .gz file itself: its header,
// deflate data and trailer. Read in chunks whose size the first byte picks, up to 16 MiB of output.
// Whatever GzipInput accepts whole, zlib's own gzip decoder must accept too, with the same bytes;
// anything else ends in mantissa::Error with one sentence. Corpus: tests/fuzz/corpus/fuzz_gzip.
#include <zlib.h>

#include <vector>

#include "data/gzip_input.h"
#include "user_file.h"
#include "error.h"
#include "fuzz_util.h"

namespace {

constexpr std::uint64_t kMaxOutput = std::uint64_t{16} << 20;

// zlib's inflate of a single gzip stream; false when it does not end cleanly within kMaxOutput.
bool zlib_inflate(const std::uint8_t* data, std::size_t size, std::vector<std::uint8_t>& out) {
    z_stream z{};
    if (inflateInit2(&z, 15 + 16) != Z_OK) std::abort();
    z.next_in = const_cast<std::uint8_t*>(data);
    z.avail_in = static_cast<uInt>(size);
    std::uint8_t buf[1 << 16];
    int rc = Z_OK;
    while (rc == Z_OK && out.size() <= kMaxOutput) {
        z.next_out = buf;
        z.avail_out = sizeof buf;
        rc = inflate(&z, Z_NO_FLUSH);
        out.insert(out.end(), buf, buf + (sizeof buf - z.avail_out));
        if (rc == Z_BUF_ERROR && z.avail_out != 0) break;
        if (rc == Z_BUF_ERROR) rc = Z_OK;
    }
    inflateEnd(&z);
    return rc == Z_STREAM_END;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string path = fuzz::write_input("input.gz", data, size);
    const std::uint64_t chunk = size > 0 ? 1 + (std::uint64_t{data[size > 10 ? 9 : 0]} * 977) % 70000 : 1;
    try {
        mantissa::UserFile file = mantissa::open_user_file(path, "The file");
        if (!mantissa::data::starts_like_gzip(file)) return 0;
        mantissa::data::GzipInput in(std::move(file), "The file");
        std::vector<std::uint8_t> out;
        std::vector<std::uint8_t> buf(chunk);
        for (;;) {
            const std::uint64_t r = in.read(buf.data(), chunk);
            out.insert(out.end(), buf.begin(), buf.begin() + static_cast<std::ptrdiff_t>(r));
            if (r < chunk) break;
            if (out.size() > kMaxOutput) return 0;  // a small file may inflate a lot: enough seen
        }
        if (out.size() > in.max_inflated_size()) fuzz::fail("more output than max_inflated_size() allows");
        if (in.ended_early()) return 0;  // cut short: the caller words the refusal
        std::vector<std::uint8_t> reference;
        if (!zlib_inflate(data, size, reference) || reference != out)
            fuzz::fail("GzipInput accepted a file that zlib reads differently");
        if (!in.stated_size() || *in.stated_size() != static_cast<std::uint32_t>(out.size()))
            fuzz::fail("an accepted file whose stated size is not its length");
    } catch (const mantissa::Error& e) {
        fuzz::check_sentence(e.what());
    }
    return 0;
}
