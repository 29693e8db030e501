// A checkpoint's metadata (engine/train/checkpoint.h has the file as a whole): what a run carries
// between steps besides its tensors, its summary so far and its experiment, as JSON in the
// safetensors metadata entry "mantissa.checkpoint". Reading it checks every key and its type, the
// version (a newer one is refused by name) and the experiment, with one sentence naming the file.
// The metadata also holds a CRC-32 of each tensor's bytes as written ("checksums"), which a reader
// checks before it uses any tensor (verify_checkpoint_tensors), so damaged bytes are refused rather
// than trained on (docs/weights.md, "Checkpoints").
// Plain C++ with no backend (the library mantissa_weights), so the fuzz target fuzz_checkpoint
// compiles it alone.
#pragma once

#include <cmath>
#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "config/experiment.h"
#include "error.h"
#include "weights/safetensors.h"

namespace mantissa {

inline constexpr int checkpoint_version = 1;
inline constexpr const char* checkpoint_metadata_key = "mantissa.checkpoint";

// What a Trainer carries between steps besides the network's and the optimizer's tensors. The
// batches need nothing: step s's batch is a function of the data, the seed, the batch size and s
// (data/train_batches.h).
struct TrainerState {
    std::int64_t step = 0;                  // steps taken: the next step's index
    double time_s = 0;                      // training time so far
    float loss_scale = 1;                   // the loss scaler's state
    std::int64_t growth_tracker = 0;
    std::int64_t optimizer_steps = 0;       // AdamW's bias correction, SGD's first step
    std::uint64_t stochastic_rounding = 0;  // the backend's position in its key sequence
    std::string bf16_matmul;                // the backend's bf16_matmul_path(): "bf16", "fp32", or ""
                                            // (one path, or a checkpoint from before it was kept)
    bool diverged = false;                  // the divergence events said once so far
    bool scale_collapsed = false;
};

// What the Session's summary had counted when the checkpoint was taken, so a continued run's
// summary covers the whole run.
struct CheckpointSummary {
    std::int64_t samples = 0;
    std::int64_t overflow_steps = 0;
    std::int64_t skipped_steps = 0;
    double final_loss = std::nan("");     // the last step's
    double test_loss = std::nan("");      // the last evaluation's
    double test_accuracy = std::nan("");
    std::int64_t last_eval_step = -1;     // the step of the last evaluation, -1 when none
};

// The CRC-32 (crc32_of, weights/safetensors.h) of each tensor's bytes as they were written, by the
// tensor's name.
using TensorChecksums = std::map<std::string, std::uint32_t>;

struct CheckpointInfo {
    int version = checkpoint_version;
    std::string run_uuid;   // the run it was taken from; empty for a run not recorded
    TrainerState trainer;   // trainer.step: the step the run continues with
    CheckpointSummary summary;
    Experiment experiment;  // the settings at the checkpoint, live changes applied
    // One for every tensor of the file; empty in a checkpoint written before they were kept (its
    // metadata has no "checksums"), whose tensors are then read unchecked.
    std::optional<TensorChecksums> checksums;
};

// The metadata's JSON text.
std::string checkpoint_info_text(const CheckpointInfo& info);
// The metadata of an opened file, checked. Throws mantissa::Error, one sentence naming the file: no
// such entry (a weights file), not JSON, a key missing or of the wrong type, a newer version, a
// "checksums" that does not hold one whole number from 0 to 2^32 - 1 for each tensor of the file
// and nothing else. Reads no tensor (verify_checkpoint_tensors does).
CheckpointInfo read_checkpoint_info(const SafetensorsFile& file);
// Only the metadata's "checksums", checked as read_checkpoint_info checks them (and the metadata's
// JSON): for a reader that lists a checkpoint rather than resumes it (`mantissa-cli weights show`),
// which a newer version or an experiment this Mantissa cannot read should not stop.
std::optional<TensorChecksums> read_checkpoint_checksums(const SafetensorsFile& file);
// What verify_checkpoint_tensors throws: a sentence that says what is wrong and ends "; the
// checkpoint is damaged." What to do instead is each front end's to say, in its own terms (the CLI
// names a mantissa-cli command, the GUI a menu), so it is caught by this type and given advice.
class DamagedCheckpointError : public Error {
public:
    using Error::Error;
    // The sentence with `advice` joined on: "...; the checkpoint is damaged, so <advice>."
    std::string with_advice(const std::string& advice) const;
};

// Reads every tensor's bytes and checks each against its checksum; nothing without checksums.
// Throws DamagedCheckpointError, one sentence naming the file and the first tensor whose bytes do
// not match (and how many others do not).
void verify_checkpoint_tensors(const SafetensorsFile& file, const std::optional<TensorChecksums>& checksums);

}  // namespace mantissa
