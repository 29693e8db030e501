// Checkpoints: the whole state of a run between two steps, in one file, from which the run
// continues bit for bit (docs/weights.md, "Checkpoints").
//
// The file is a safetensors file (weights/safetensors.h), so one checked reader serves weights and
// checkpoints, and PyTorch or NumPy can open it:
//   - the model's state dict under PyTorch's names, each tensor in its stored dtype (the FP32
//     masters where the run keeps them), as save_state_dict writes it;
//   - "mantissa.optimizer.<parameter>.<state>": the optimizer's FP32 state under PyTorch's names
//     (exp_avg, exp_avg_sq, momentum_buffer), and "kahan", the compensation of a narrow weight;
//   - "mantissa.fp8.<layer>.<role>": an FP8 layer's scaling state per tensor (input, weight,
//     grad_output): its scale, its inverse and its amax history, newest first;
//   - "__metadata__"/"mantissa.checkpoint": JSON with the step, the training time, the loss
//     scaler's state, the optimizer's step count, the stochastic rounding position, the matmul
//     path of bf16 operands (Backend::bf16_matmul_path, which restore() sets again), the run's
//     summary so far and the experiment as it stands, live changes applied
//     (weights/checkpoint_info.h), and the CRC-32 of each tensor's bytes as written ("checksums").
// The batches need nothing: step s's batch is a function of the data, the seed, the batch size
// and s. Writing is atomic (write_safetensors): a kill leaves the old file or the whole new one.
#pragma once

#include <string>

#include "train/trainer.h"
#include "weights/checkpoint_info.h"
#include "weights/safetensors.h"

namespace mantissa {

// Writes the trainer's state (no step in flight) to `path`. Throws mantissa::Error naming the file.
void write_checkpoint(Trainer& trainer, const std::string& path, const std::string& run_uuid,
                      const CheckpointSummary& summary);

// A checkpoint file opened and checked: the safetensors header (checked whole before anything is
// read), the metadata's JSON, its version (a newer one is refused), its keys and the experiment in
// it, then every tensor's bytes against the checksum written with them (a checkpoint from before
// checksums were kept has none, and its bytes go unchecked). So a damaged file is refused here,
// before a resume writes anything to the store or the network. Reads every tensor once (CRC-32 at
// GB/s) and keeps none, but keeps the file open, so restore() reads the file that was checked even
// once its path is removed or another file is renamed over it: a resume hands its opened
// Checkpoint to the Session (SessionOptions::resume_from) rather than the path, to open and check
// the file once. Throws mantissa::Error, one sentence naming the file; a DamagedCheckpointError
// (weights/checkpoint_info.h) for bytes that do not match their checksums or that are not a
// well-formed safetensors file (one cut short).
class Checkpoint {
public:
    explicit Checkpoint(const std::string& path);
    const CheckpointInfo& info() const { return m_info; }
    const SafetensorsFile& file() const { return m_file; }

    // Puts the state into `trainer`, built from info().experiment (or a branch's changed copy of
    // it) on the same dataset, before its first step. Every tensor is checked against the model
    // (present, its shape, a dtype of real numbers) and converted before any is written.
    void restore(Trainer& trainer) const;

private:
    SafetensorsFile m_file;
    CheckpointInfo m_info;
};

}  // namespace mantissa
