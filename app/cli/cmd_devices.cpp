// `mantissa-cli devices`: the compute backends this machine offers, and for CUDA each GPU (name,
// compute capability, memory, the formats it can multiply in) or the precise reason there is
// none: Mantissa built without CUDA, the module, its libraries, the NVIDIA driver, or a GPU
// missing. Always exits 0: no GPU is an answer, not a failure.
#include <cstdio>
#include <iostream>

#include <nlohmann/json.hpp>

#include "backend/backend.h"
#include "backend/cuda/cuda_loader.h"
#include "cli/cli_common.h"

namespace mantissa::cli {
namespace {

std::string gib(std::int64_t bytes) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.1f GiB", static_cast<double>(bytes) / (1024.0 * 1024.0 * 1024.0));
    return buf;
}

std::string cuda_version(int v) {
    if (v <= 0) return "unknown";
    return std::to_string(v / 1000) + "." + std::to_string((v % 1000) / 10);
}

nlohmann::ordered_json device_json(const CudaDeviceReport& d) {
    nlohmann::ordered_json formats = nlohmann::ordered_json::array();
    for (Format f : d.formats) formats.push_back(std::string(format_name(f)));
    nlohmann::ordered_json refused = nlohmann::ordered_json::array();
    for (const auto& [f, why] : d.refused)
        refused.push_back({{"format", std::string(format_name(f))}, {"reason", why}});
    nlohmann::ordered_json j = {{"index", d.index},
                                {"name", d.name},
                                {"compute_capability", std::to_string(d.cc_major) + "." + std::to_string(d.cc_minor)},
                                {"memory_bytes", d.total_bytes},
                                {"multiprocessors", d.multiprocessors},
                                {"usable", d.usable},
                                {"formats", formats},
                                {"refused", refused}};
    if (!d.usable) j["reason"] = d.unusable_reason;
    return j;
}

int run_devices(Args& args) {
    args.flag("json");
    args.parse();
    args.expect_words(0, "", "mantissa-cli devices [--json]");
    const std::vector<BackendAvailability> backends = backend_availability();
    const CudaReport& cuda = cuda_loader().report();

    if (args.has("json")) {
        nlohmann::ordered_json out = nlohmann::ordered_json::array();
        for (const auto& b : backends) {
            nlohmann::ordered_json j = {{"name", b.name}, {"available", b.available}};
            if (b.available) j["device"] = b.device;
            if (b.name == "cuda") {
                if (!b.available) j["reason"] = cuda.available() ? b.reason : cuda.reason;
                j["missing"] = cuda_missing_name(cuda.missing);
                if (!cuda.module_path.empty()) j["module"] = cuda.module_path;
                if (cuda.driver_version) j["driver_cuda_version"] = cuda_version(cuda.driver_version);
                if (cuda.runtime_version) j["runtime_cuda_version"] = cuda_version(cuda.runtime_version);
                nlohmann::ordered_json gpus = nlohmann::ordered_json::array();
                for (const auto& d : cuda.devices) gpus.push_back(device_json(d));
                j["gpus"] = gpus;
            } else if (!b.available) {
                j["reason"] = b.reason;
            }
            out.push_back(j);
        }
        std::cout << nlohmann::ordered_json{{"backends", out}}.dump(2) << "\n";
        return exit_ok;
    }

    for (const auto& b : backends) {
        if (b.name != "cuda") {
            std::printf("%-5s %s\n", b.name.c_str(),
                        b.available ? b.device.c_str() : ("not available: " + b.reason).c_str());
            continue;
        }
        if (!b.available || cuda.devices.empty()) {
            const std::string& reason = cuda.available() ? b.reason : cuda.reason;
            std::printf("%-5s not available: %s\n", b.name.c_str(), reason.c_str());
            continue;
        }
        std::printf("%-5s driver CUDA %s, module %s\n", b.name.c_str(), cuda_version(cuda.driver_version).c_str(),
                    cuda.module_path.c_str());
        for (const auto& d : cuda.devices) {
            std::printf("  GPU %d  %s  compute capability %d.%d  %s  %d SMs\n", d.index, d.name.c_str(), d.cc_major,
                        d.cc_minor, gib(d.total_bytes).c_str(), d.multiprocessors);
            if (!d.usable) {
                std::printf("         not usable: %s\n", d.unusable_reason.c_str());
                continue;
            }
            std::string formats;
            for (Format f : d.formats) formats += (formats.empty() ? "" : ", ") + std::string(format_name(f));
            std::printf("         formats: %s\n", formats.c_str());
            for (const auto& [f, why] : d.refused)
                std::printf("         no %s: %s\n", std::string(format_name(f)).c_str(), why.c_str());
        }
    }
    return exit_ok;
}

}  // namespace

MANTISSA_CLI_COMMAND({"devices", "list the compute backends and GPUs, or why there is no GPU",
                      "usage: mantissa-cli devices [--json]\n\n"
                      "Lists each compute backend (cpu, cuda) and whether it can run here. For CUDA, each GPU\n"
                      "with its compute capability, memory and the number formats it can multiply in (and why\n"
                      "not the others), or the reason there is no GPU backend: Mantissa built without CUDA,\n"
                      "the CUDA module (libmantissa_cuda.so) or its libraries missing, no NVIDIA driver, or no\n"
                      "usable GPU. The module is looked for in $MANTISSA_CUDA_MODULE, next to mantissa-cli and\n"
                      "in ../lib/mantissa. Exits 0 whether or not a GPU is found.\n\n"
                      "  --json   print {\"backends\": [...]} for scripts\n",
                      run_devices});

}  // namespace mantissa::cli
