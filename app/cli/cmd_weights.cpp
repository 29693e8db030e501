// `mantissa-cli weights export RUN [--step S] -o FILE`: a run's weights at one of its checkpoints
// as a safetensors file PyTorch loads (safetensors.torch.load_file, then load_state_dict): the
// model's tensors of the checkpoint under their state-dict names and layouts, each in its stored
// dtype, byte for byte, and the experiment in the metadata. `mantissa-cli weights show FILE` lists
// what a safetensors file holds (a file from PyTorch before model.init_from reads it); for a
// Mantissa checkpoint it first checks every tensor's bytes against the checksum written with them
// (weights/checkpoint_info.h), so a damaged checkpoint is exit 2 naming the tensor, as resume says.
#include <cstdio>
#include <exception>
#include <filesystem>
#include <iostream>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/cli_common.h"
#include "config/telemetry.h"
#include "error.h"
#include "printable_text.h"
#include "store/checkpoint_rows.h"
#include "store/run_store.h"
#include "train/checkpoint.h"
#include "weights/checkpoint_info.h"
#include "weights/safetensors.h"

namespace mantissa::cli {
namespace {

int export_weights(Args& args) {
    args.allow_only({"output", "step", "db", "json"}, "weights export");
    args.expect_words(2, "give the run whose weights to export", "mantissa-cli weights export RUN -o FILE.safetensors");
    const auto out = args.value("output");
    if (!out) throw UsageError{"give the file to write with -o FILE.safetensors"};
    const std::string db = args.value("db").value_or(default_store_path());
    if (!store_file_present(db)) throw Error("There is no run store at " + db + " yet, so there are no weights to export.");
    RunStore store(db, StoreAccess::read);
    const RunRow run = store.run(store.resolve(args.positional()[1]));
    const std::vector<CheckpointRow> checkpoints = store.checkpoints(run.id);
    if (checkpoints.empty())
        throw Error("Run " + std::to_string(run.id) + " has no checkpoints, so no weights were kept: a run keeps its weights "
                    "in checkpoints (train.checkpoint_every, and one where it ends).");
    const CheckpointRow* from = &checkpoints.back();
    if (auto step = args.integer("step")) {
        from = nullptr;
        for (const CheckpointRow& c : checkpoints)
            if (c.step == *step) from = &c;
        if (!from) {
            std::string steps;
            for (const CheckpointRow& c : checkpoints) steps += (steps.empty() ? "" : ", ") + std::to_string(c.step);
            throw Error("Run " + std::to_string(run.id) + " has no checkpoint at step " + std::to_string(*step) +
                        "; its checkpoints are at steps " + steps + ".");
        }
    }

    // The guard refuses any checkpoint (a file in a store's checkpoint folder, or one holding a
    // Mantissa checkpoint's metadata), a named pipe and a link loop.
    refuse_unsafe_output("-o", *out, {{db, "the run store"}, {from->file, "the checkpoint it reads"}});
    // Written beside the file a symbolic link leads to and renamed onto it: the link stays.
    const std::string destination = app::output_destination(*out).value_or(*out);
    const Checkpoint checkpoint(from->file);
    const SafetensorsFile& file = checkpoint.file();
    std::vector<SafetensorsTensor> tensors;
    for (const SafetensorsEntry& e : file.entries())
        if (!e.name.starts_with("mantissa.")) tensors.push_back({e.name, e.dtype, e.shape, file.read_bytes(e)});
    const std::map<std::string, std::string> metadata = {
        {"format", "pt"},
        {"producer", std::string("mantissa ") + MANTISSA_VERSION},
        {"mantissa.run", run.uuid},
        {"mantissa.step", std::to_string(from->step)},
        {"mantissa.experiment", experiment_to_json(checkpoint.info().experiment).dump()},
    };
    const std::size_t count = tensors.size();
    write_safetensors(destination, std::move(tensors), metadata);
    if (args.has("json")) {
        const nlohmann::ordered_json j = {{"file", *out}, {"run", run.id}, {"step", from->step}, {"tensors", count}};
        std::cout << j.dump(2) << std::endl;
        return exit_ok;
    }
    std::printf("Wrote %zu tensors of run %lld at step %lld to %s.\n", count, static_cast<long long>(run.id),
                static_cast<long long>(from->step), printable_text(*out).c_str());
    return exit_ok;
}

int show_weights(Args& args) {
    args.allow_only({"json"}, "weights show");
    args.expect_words(2, "give the file to show", "mantissa-cli weights show FILE.safetensors");
    const SafetensorsFile file(args.positional()[1]);
    // A checkpoint's tensors against their checksums, before anything is printed: a damaged one is
    // one sentence and exit 2. Only the checksums are read from its metadata, so a checkpoint of a
    // newer Mantissa, or with an experiment this one cannot read, is still listed.
    const bool checkpoint = file.metadata().contains(checkpoint_metadata_key);
    bool checksums = false;
    if (checkpoint) {
        const std::optional<TensorChecksums> sums = read_checkpoint_checksums(file);
        verify_checkpoint_tensors(file, sums);
        checksums = sums.has_value();
    }
    if (args.has("json")) {
        nlohmann::ordered_json out = {{"file", file.path()}, {"tensors", nlohmann::ordered_json::array()},
                                      {"metadata", file.metadata()}};
        for (const SafetensorsEntry& e : file.entries())
            out["tensors"].push_back({{"name", e.name}, {"dtype", dtype_name(e.dtype)}, {"shape", e.shape}, {"bytes", e.bytes()}});
        if (checkpoint) out["checksums"] = checksums ? "match" : "none";
        std::cout << out.dump() << std::endl;
        return exit_ok;
    }
    std::uint64_t bytes = 0;
    for (const SafetensorsEntry& e : file.entries()) bytes += e.bytes();
    std::printf("%s: %zu tensors, %s\n", printable_text(file.path()).c_str(), file.entries().size(),
                format_byte_size(static_cast<std::int64_t>(bytes)).c_str());
    for (const SafetensorsEntry& e : file.entries())
        std::printf("  %-40s %-8s %s\n", printable_text(e.name).c_str(), std::string(dtype_name(e.dtype)).c_str(),
                    shape_text(e.shape).c_str());
    for (const auto& [key, value] : file.metadata())
        if (key != "mantissa.checkpoint" && key != "mantissa.experiment")
            std::printf("  metadata %s: %s\n", printable_text(key).c_str(), printable_text(value).c_str());
    // The long JSON entries by their size, so the list stays readable and none is passed over.
    if (const auto it = file.metadata().find("mantissa.experiment"); it != file.metadata().end())
        std::printf("  metadata mantissa.experiment: the run's experiment, %zu bytes of JSON (--json prints it)\n",
                    it->second.size());
    if (checkpoint)
        std::printf("  a Mantissa checkpoint (mantissa-cli resume reads it); %s\n",
                    checksums ? "every tensor's bytes match the checksum written with them"
                              : "written before checkpoints kept checksums, so its bytes cannot be checked");
    return exit_ok;
}

int run_weights(Args& args) {
    args.option("output");  // also -o
    args.option("step");
    args.option("db");
    args.flag("json");
    args.parse();
    const std::string action = args.positional().empty() ? "" : args.positional().front();
    if (action == "export") return export_weights(args);
    if (action == "show") return show_weights(args);
    throw UsageError{action.empty() ? "give an action: export or show" : "unknown action '" + action + "': export or show"};
}

}  // namespace

MANTISSA_CLI_COMMAND({"weights", "export a run's weights as safetensors, or show what a safetensors file holds",
                      "usage: mantissa-cli weights export RUN [--step S] -o FILE.safetensors [--db FILE] [--json]\n"
                      "       mantissa-cli weights show FILE.safetensors [--json]\n\n"
                      "export writes RUN's weights at its checkpoint at step S (default: the latest) under\n"
                      "PyTorch's state-dict names and layouts (fc1.weight is (out, in), a conv weight (out, in,\n"
                      "kh, kw), batch norm's running_mean and running_var), each in the dtype it is stored in\n"
                      "(F32; F16 or BF16 for a 16-bit layer without master weights; never FP8: FP8 and block-\n"
                      "scaled operands are quantised from the stored weights at each step, docs/weights.md),\n"
                      "with the experiment in the metadata. PyTorch reads it with safetensors.torch.load_file;\n"
                      "model.init_from starts a run from it. --json prints {\"file\", \"run\", \"step\",\n"
                      "\"tensors\"} for what was written.\n\n"
                      "show lists a safetensors file's tensors (name, dtype, shape) and its metadata (F8_E4M3\n"
                      "and F8_E5M2 tensors too, from another program); --json prints them as one object. For a\n"
                      "Mantissa checkpoint it first checks each tensor's bytes against the CRC-32 written with\n"
                      "them (--json: \"checksums\": \"match\", or \"none\" for a checkpoint from before they\n"
                      "were kept); a damaged checkpoint is refused, naming the tensor.\n\n"
                      "Exit status: 0 done, 2 bad usage or input (no such run or checkpoint, a damaged file or\n"
                      "checkpoint).\n",
                      run_weights});

}  // namespace mantissa::cli
