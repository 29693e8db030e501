// The state dict: a Network's tensors under the names, shapes and layouts PyTorch's state_dict()
// gives the same model (Layer::state, Network::state), written to and read from a safetensors
// file (weights/safetensors.h). docs/weights.md lists each layer kind's entries.
//
// Saving writes each tensor in the dtype of the format it is stored in (FP32 masters as F32, a
// bf16 weight kept without masters as BF16, an fp8 layer's weights in their output format),
// downloaded from the backend; the values are written exactly. Loading checks the whole file
// against the network first (every tensor present, none extra, shapes equal, dtypes of real
// numbers), then converts every value to its tensor's stored format (rounded to nearest, ties to
// even, where the file's dtype is wider), and only then uploads: a refused file leaves the
// network as it was. Training thread only (the network's backend).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "model/network.h"
#include "weights/safetensors.h"

namespace mantissa {

struct StateDictOptions {
    // Written to "__metadata__" beside "format": "pt" and "producer": "mantissa <version>".
    std::map<std::string, std::string> metadata;
    // Each batch norm's num_batches_tracked (an I64 scalar, as PyTorch keeps it): the training
    // batches the layer has normalised. Mantissa does not count them (its momentum is a number, so
    // the count changes nothing); a caller that knows the steps trained says so here.
    std::int64_t batches_tracked = 0;
};

// The tensors save_state_dict writes, in the order of Network::state() (the file lays them out as
// safetensors.torch.save_file does: write_safetensors).
std::vector<SafetensorsTensor> state_dict_tensors(const Network& network, const StateDictOptions& options = {});

// Writes the network's state dict to `path` (atomically: write_safetensors).
void save_state_dict(const Network& network, const std::string& path, const StateDictOptions& options = {});

// Loads the safetensors file at `path` into the network: every tensor the network has must be in
// the file with the shape PyTorch gives it, and the file may hold nothing else. Optional: each
// batch norm's num_batches_tracked (read and checked, not kept), and a tied head's weight, which
// must then equal the table it is tied to (the table loads from it when the file holds only that
// name, as safetensors.torch.save_model may keep only one name of a shared tensor). Throws
// mantissa::Error, one sentence naming the file and the tensor, with nothing changed.
void load_state_dict(Network& network, const std::string& path);
// The same from a file already opened. Tensors whose names begin with `other_prefix` (when not
// empty) are not the model's and are left alone: a checkpoint's optimizer and scaling state
// (engine/train/checkpoint.h).
void load_state_dict(Network& network, const SafetensorsFile& file, std::string_view other_prefix = {});

}  // namespace mantissa
