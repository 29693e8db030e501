// Fuzz target: the safetensors reader (weights/safetensors.h), the input being the file. An accepted
// file's entries tile its data exactly, each holding what its dtype and shape take; every entry
// reads as bytes, real-number dtypes as values (or an overflow sentence for fp16), integer dtypes
// as integers (or a sentence for a U64 beyond 2^63 - 1); written again with write_safetensors and
// read back, it holds the same tensors, bytes and metadata. A refusal is mantissa::Error with one
// sentence, quoted bytes escaped. Corpus: tests/fuzz/corpus/fuzz_safetensors (docs/fuzzing.md).
#include <cmath>
#include <map>

#include "error.h"
#include "fuzz_util.h"
#include "weights/safetensors.h"

namespace {

using mantissa::Dtype;
using mantissa::SafetensorsEntry;
using mantissa::SafetensorsFile;

// Each tensor by name: dtype, shape and bytes.
std::map<std::string, mantissa::SafetensorsTensor> tensors_of(const SafetensorsFile& f) {
    std::map<std::string, mantissa::SafetensorsTensor> out;
    for (const SafetensorsEntry& e : f.entries()) out[e.name] = {e.name, e.dtype, e.shape, f.read_bytes(e)};
    return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string path = fuzz::write_input("fuzz.safetensors", data, size);
    try {
        const SafetensorsFile f(path);
        if (size < 8) fuzz::fail("a file shorter than 8 bytes accepted");
        std::uint64_t n = 0;
        for (int i = 7; i >= 0; --i) n = (n << 8) | data[i];
        if (n > mantissa::kSafetensorsHeaderLimit || 8 + n > size) fuzz::fail("a header beyond its limits accepted");
        std::uint64_t at = 0;
        for (const SafetensorsEntry& e : f.entries()) {
            if (e.begin != at) fuzz::fail("entries that do not tile the data", e.name);
            at = e.end;
            const std::uint64_t bits = e.elements() * static_cast<std::uint64_t>(mantissa::dtype_bits(e.dtype));
            if (bits % 8 != 0 || e.bytes() != bits / 8) fuzz::fail("an entry whose bytes do not fit its shape", e.name);
            if (f.find(e.name) != &e) fuzz::fail("a name found at another entry", e.name);
            if (f.read_bytes(e).size() != e.bytes()) fuzz::fail("bytes read that are not the entry's");
            if (mantissa::format_of(e.dtype) || e.dtype == Dtype::F64) {
                if (f.read_values(e).size() != e.elements()) fuzz::fail("values read that are not the entry's");
                try {
                    for (float v : f.read_values(e, mantissa::Format::fp16))
                        if (std::isfinite(v) && std::fabs(v) > 65504.0f) fuzz::fail("an fp16 value beyond fp16");
                } catch (const mantissa::Error& err) {
                    fuzz::check_sentence(err.what());
                }
            } else if (mantissa::dtype_is_integer(e.dtype)) {
                try {
                    if (f.read_integers(e).size() != e.elements()) fuzz::fail("integers read that are not the entry's");
                } catch (const mantissa::Error& err) {
                    fuzz::check_sentence(err.what());
                }
            }
        }
        if (8 + n + at != size) fuzz::fail("data left after the last entry");

        // Written again and read back: the same tensors and metadata.
        const auto before = tensors_of(f);
        std::vector<mantissa::SafetensorsTensor> again;
        for (const auto& [name, t] : before) again.push_back(t);
        const std::string copy = fuzz::scratch() + "/copy.safetensors";
        mantissa::write_safetensors(copy, again, f.metadata());
        const SafetensorsFile g(copy);
        const auto after = tensors_of(g);
        if (after.size() != before.size() || g.metadata() != f.metadata()) fuzz::fail("a copy with other entries");
        for (const auto& [name, t] : before) {
            const auto it = after.find(name);
            if (it == after.end() || it->second.dtype != t.dtype || it->second.shape != t.shape || it->second.bytes != t.bytes)
                fuzz::fail("a copy with another tensor", name);
        }
    } catch (const mantissa::Error& e) {
        fuzz::check_sentence(e.what());
    }
    return 0;
}
