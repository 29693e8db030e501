// Fuzz target: a checkpoint's metadata (weights/checkpoint_info.h) inside a safetensors file, the
// input being the metadata's JSON text. The reader accepts it or refuses it with one sentence; an
// accepted one holds a version this Mantissa reads, a step of at least 0, no more optimizer steps
// (or growth-tracker steps) than steps, a finite training time of at least 0, a loss scale that is
// a finite FP32 number above 0 (0 only when collapsed), checksums (when it has them) for exactly
// the file's one tensor, which read_checkpoint_checksums reads the same and verify_checkpoint_tensors
// accepts or refuses with one sentence, and written again (checkpoint_info_text) it reads back the
// same. Corpus: tests/fuzz/corpus/fuzz_checkpoint (docs/fuzzing.md).
#include <cmath>
#include <map>
#include <string>

#include "error.h"
#include "fuzz_util.h"
#include "weights/checkpoint_info.h"
#include "weights/safetensors.h"

namespace {

// The file: one small tensor and the input as the checkpoint's metadata entry (the safetensors
// header itself is fuzzed by fuzz_safetensors).
std::string checkpoint_with(const std::string& name, const std::string& metadata) {
    const std::string path = fuzz::scratch() + "/" + name;
    const float one = 1.0f;
    mantissa::write_safetensors(path, {mantissa::safetensors_tensor("fc1.weight", mantissa::Dtype::F32, {1}, {&one, 1})},
                                {{mantissa::checkpoint_metadata_key, metadata}});
    return path;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string text(reinterpret_cast<const char*>(data), size);
    std::string path;
    try {
        path = checkpoint_with("fuzz.safetensors", text);
    } catch (const mantissa::Error& e) {  // metadata that is not UTF-8: the writer refuses it
        fuzz::check_sentence(e.what());
        return 0;
    }
    try {
        const mantissa::CheckpointInfo info = mantissa::read_checkpoint_info(mantissa::SafetensorsFile(path));
        const mantissa::TrainerState& t = info.trainer;
        if (info.version < 1 || info.version > mantissa::checkpoint_version) fuzz::fail("a version beyond this reader");
        if (t.step < 0 || t.optimizer_steps < 0 || t.optimizer_steps > t.step) fuzz::fail("impossible step counts");
        if (!(t.time_s >= 0) || !std::isfinite(t.time_s)) fuzz::fail("an impossible training time");
        if (!std::isfinite(t.loss_scale) || !(t.loss_scale > 0 || (t.loss_scale == 0 && t.scale_collapsed)))
            fuzz::fail("an impossible loss scale");
        if (t.growth_tracker < 0 || t.growth_tracker > t.step) fuzz::fail("an impossible growth tracker");
        const mantissa::SafetensorsFile file(path);
        if (info.checksums && (info.checksums->size() != 1 || !info.checksums->contains("fc1.weight")))
            fuzz::fail("checksums that are not one for each tensor");
        if (mantissa::read_checkpoint_checksums(file) != info.checksums) fuzz::fail("checksums read two ways");
        try {
            mantissa::verify_checkpoint_tensors(file, info.checksums);
        } catch (const mantissa::Error& e) {  // a checksum that is not fc1.weight's
            fuzz::check_sentence(e.what());
        }
        // Written again, read back the same.
        const std::string again = checkpoint_with("again.safetensors", mantissa::checkpoint_info_text(info));
        const mantissa::CheckpointInfo back = mantissa::read_checkpoint_info(mantissa::SafetensorsFile(again));
        if (mantissa::checkpoint_info_text(back) != mantissa::checkpoint_info_text(info)) fuzz::fail("a copy that differs");
    } catch (const mantissa::Error& e) {
        fuzz::check_sentence(e.what());
    }
    return 0;
}
