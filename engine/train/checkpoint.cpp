// Checkpoints: writing a run's state to a safetensors file and putting it back (checkpoint.h).
#include "train/checkpoint.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <map>
#include <set>

#include "backend/loss_scaler.h"
#include "error.h"
#include "printable_text.h"
#include "weights/state_dict.h"

namespace mantissa {

namespace {

constexpr std::string_view state_prefix = "mantissa.";
constexpr std::array<Fp8Role, 3> fp8_roles = {Fp8Role::input, Fp8Role::weight, Fp8Role::grad_output};

std::string optimizer_tensor_name(const std::string& parameter, const char* state) {
    return "mantissa.optimizer." + parameter + "." + state;
}

std::string fp8_name(const std::string& layer, Fp8Role role) {
    return "mantissa.fp8." + layer + "." + fp8_role_name(role);
}

// The values of a checkpoint tensor that must hold `count` of them, in `format`.
std::vector<float> state_values(const SafetensorsFile& file, const SafetensorsEntry& entry, std::int64_t count,
                                Format format) {
    if (entry.elements() != static_cast<std::uint64_t>(count))
        throw Error(printable_text(file.path()) + ": tensor " + printable_text(entry.name) + " holds " +
                    std::to_string(entry.elements()) + " values where this run has " + std::to_string(count) +
                    "; the checkpoint was taken from another model.");
    return file.read_values(entry, format);
}

}  // namespace

void write_checkpoint(Trainer& trainer, const std::string& path, const std::string& run_uuid,
                      const CheckpointSummary& summary) {
    CheckpointInfo info;
    info.run_uuid = run_uuid;
    info.trainer = trainer.state();  // throws with a step in flight
    info.summary = summary;
    info.experiment = trainer.settings();

    Network& network = trainer.network();
    StateDictOptions options;
    options.batches_tracked = info.trainer.step;  // PyTorch counts every training forward
    std::vector<SafetensorsTensor> tensors = state_dict_tensors(network, options);
    const auto& params = network.parameters();
    for (const OptimizerStateTensor& s : trainer.optimizer().state_tensors()) {
        const std::vector<float> values = network.read(*s.tensor);
        tensors.push_back(safetensors_tensor(optimizer_tensor_name(params.at(s.parameter).name, s.name), Dtype::F32,
                                             {static_cast<std::uint64_t>(values.size())}, values));
    }
    for (int l = 0; l < network.layer_count(); ++l) {
        const Fp8State* fp8 = network.fp8_state(l);
        if (!fp8) continue;
        for (Fp8Role role : fp8_roles) {
            const Fp8TensorSnapshot s = fp8->snapshot(role);
            std::vector<float> values = {s.scale, s.scale_inv};
            values.insert(values.end(), s.amax_history.begin(), s.amax_history.end());
            tensors.push_back(safetensors_tensor(fp8_name(network.layer(l).name(), role), Dtype::F32,
                                                 {static_cast<std::uint64_t>(values.size())}, values));
        }
    }
    // Each tensor's CRC-32, taken from the bytes about to be written (one pass, while they are in
    // hand), so a reader finds any byte that changed after (verify_checkpoint_tensors).
    info.checksums.emplace();
    for (const SafetensorsTensor& t : tensors) info.checksums->emplace(t.name, crc32_of(t.bytes));
    const std::map<std::string, std::string> metadata = {
        {"format", "pt"},
        {"producer", std::string("mantissa ") + MANTISSA_VERSION},
        {checkpoint_metadata_key, checkpoint_info_text(info)},
    };
    write_safetensors(path, std::move(tensors), metadata);
}

// A file Mantissa wrote that is not even a well-formed safetensors file (cut short by a full disk
// or a copy that stopped) is as damaged as one whose bytes miss their checksums, and is said so.
Checkpoint::Checkpoint(const std::string& path) try : m_file(path), m_info(read_checkpoint_info(m_file)) {
    verify_checkpoint_tensors(m_file, m_info.checksums);
} catch (const SafetensorsFormatError& e) {
    std::string sentence = e.what();
    if (sentence.ends_with('.')) sentence.pop_back();
    throw DamagedCheckpointError(sentence + "; the checkpoint is damaged.");
}

void Checkpoint::restore(Trainer& trainer) const {
    const std::string where = printable_text(m_file.path());
    Network& network = trainer.network();
    const auto& params = network.parameters();

    // The optimizer's state: every tensor the run's optimizer uses, read and converted first. A
    // Kahan buffer the file lacks starts at zero (a branch that turned Kahan summation on); one it
    // has and the run does not use is dropped (a branch that turned it off).
    struct Write {
        Tensor* tensor;
        std::vector<float> values;
    };
    std::vector<Write> writes;
    std::set<std::string> used;
    for (const OptimizerStateTensor& s : trainer.optimizer().state_tensors()) {
        const std::string name = optimizer_tensor_name(params.at(s.parameter).name, s.name);
        const SafetensorsEntry* e = m_file.find(name);
        if (!e) {
            if (std::strcmp(s.name, "kahan") == 0) continue;
            throw Error(where + " has no tensor " + name + ", which this run's " +
                        optimizer_name(trainer.settings().train.optimizer) +
                        " optimizer keeps; the checkpoint was taken with another optimizer or model.");
        }
        writes.push_back({s.tensor, state_values(m_file, *e, s.tensor->numel(), s.tensor->format())});
        used.insert(name);
    }
    for (const SafetensorsEntry& e : m_file.entries())
        if (e.name.starts_with("mantissa.optimizer.") && !used.contains(e.name) && !e.name.ends_with(".kahan"))
            throw Error(where + ": tensor " + printable_text(e.name) + " is optimizer state that this run's " +
                        optimizer_name(trainer.settings().train.optimizer) +
                        " optimizer does not keep; the checkpoint was taken with another optimizer or model.");

    // FP8 scaling state, for the layers that run FP8 both here and in the checkpoint (a branch may
    // switch a layer to FP8, whose state then starts afresh, or away from it). A history longer
    // than this run's window keeps its newest entries.
    struct Fp8Restore {
        Fp8State* state;
        Fp8Role role;
        Fp8TensorSnapshot snapshot;
    };
    std::vector<Fp8Restore> fp8;
    const auto history_len = static_cast<std::size_t>(trainer.settings().precision.fp8.amax_history_len);
    for (int l = 0; l < network.layer_count(); ++l) {
        Fp8State* state = network.fp8_state(l);
        if (!state) continue;
        for (Fp8Role role : fp8_roles) {
            const SafetensorsEntry* e = m_file.find(fp8_name(network.layer(l).name(), role));
            if (!e) continue;
            if (e->elements() < 2)
                throw Error(where + ": tensor " + printable_text(e->name) +
                            " holds fewer than the 2 values of a scale and its inverse; the file is damaged.");
            const std::vector<float> v = m_file.read_values(*e, Format::fp32);
            Fp8TensorSnapshot s;
            s.scale = v[0];
            s.scale_inv = v[1];
            s.amax_history.assign(v.begin() + 2, v.begin() + 2 + static_cast<std::ptrdiff_t>(
                                                                   std::min(v.size() - 2, history_len)));
            fp8.push_back({state, role, std::move(s)});
        }
    }

    // The model's tensors (checked whole, then written), then the rest.
    load_state_dict(network, m_file, state_prefix);
    for (Write& w : writes) network.write(*w.tensor, w.values);
    for (const Fp8Restore& f : fp8) f.state->restore(f.role, f.snapshot);
    // A branch with other loss scaling takes it as a live change would (LossScaler::reconfigure):
    // a new mode restarts at its init_scale, the same mode keeps the scale it had reached.
    TrainerState state = m_info.trainer;
    const LossScalingSpec& had = m_info.experiment.precision.loss_scaling;
    const LossScalingSpec& wants = trainer.settings().precision.loss_scaling;
    if (!(had == wants)) {
        LossScaler scaler(had);
        scaler.restore(state.loss_scale, state.growth_tracker);
        scaler.reconfigure(wants);
        state.loss_scale = scaler.scale();
        state.growth_tracker = scaler.growth_tracker();
    }
    trainer.restore(state);
}

}  // namespace mantissa
