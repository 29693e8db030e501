// The machine a benchmark ran on, and where the suites find their helpers (bench.h).
#include <oneapi/dnnl/dnnl.hpp>

#include <sys/utsname.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include "backend/cpu/cpu_matmul.h"
#include "bench/bench.h"

namespace mantissa::bench {

namespace {

// The value after "key:" (or "key=") on the first line of `path` that starts with `key`.
std::string field(const std::string& path, const std::string& key) {
    std::ifstream in(path);
    std::string line;
    while (std::getline(in, line)) {
        if (line.rfind(key, 0) != 0) continue;
        auto pos = line.find_first_of(":=", key.size());
        if (pos == std::string::npos) continue;
        std::string v = line.substr(pos + 1);
        while (!v.empty() && (v.front() == ' ' || v.front() == '\t' || v.front() == '"')) v.erase(v.begin());
        while (!v.empty() && (v.back() == ' ' || v.back() == '"')) v.pop_back();
        return v;
    }
    return {};
}

bool executable(const std::string& path) { return !path.empty() && access(path.c_str(), X_OK) == 0; }

}  // namespace

int apply_threads(const BenchOptions& options) {
    if (options.threads > 0) setenv("MANTISSA_CPU_THREADS", std::to_string(options.threads).c_str(), 1);
    const int n = CpuMatmul::default_threads();
    setenv("MANTISSA_CPU_THREADS", std::to_string(n).c_str(), 1);
    return n;
}

nlohmann::json machine_info() {
    nlohmann::json m;
    m["cpu"] = field("/proc/cpuinfo", "model name");
    m["logical_cpus"] = std::thread::hardware_concurrency();
    m["isa"] = CpuMatmul::isa_name();
    const Bf16MatmulChoice& bf16 = CpuMatmul::measured_bf16_choice();
    m["bf16_matmul"] = {{"bf16", bf16.bf16}, {"why", bf16.why}, {"fp32_ms", bf16.fp32_ms}, {"bf16_ms", bf16.bf16_ms}};
    const dnnl_version_t* v = dnnl_version();
    m["onednn"] = std::to_string(v->major) + "." + std::to_string(v->minor) + "." + std::to_string(v->patch);
    m["os"] = field("/etc/os-release", "PRETTY_NAME");
    utsname u{};
    if (uname(&u) == 0) m["kernel"] = std::string(u.release) + " " + u.machine;
    const std::string mem = field("/proc/meminfo", "MemTotal");
    if (!mem.empty()) m["memory_gib"] = std::round(std::atof(mem.c_str()) / (1024.0 * 1024.0) * 10) / 10;
    const std::string hv = field("/proc/cpuinfo", "flags");
    m["virtualised"] = hv.find(" hypervisor") != std::string::npos;
    return m;
}

std::string executable_dir() {
    std::error_code ec;
    const auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
    return ec ? std::string{} : exe.parent_path().string();
}

bool gui_built() { return MANTISSA_BENCH_GUI_BUILT != 0; }

std::string find_gui_executable() {
    const std::string beside = executable_dir() + "/mantissa";
    return executable(beside) ? beside : std::string{};
}

std::string find_peer_script() {
    if (const char* env = std::getenv("MANTISSA_PEER_SCRIPT"); env && *env) return env;
    const std::string candidates[] = {
        executable_dir() + "/../share/mantissa/bench/torch_peer.py",   // installed
        std::string(MANTISSA_BENCH_SOURCE_DIR) + "/tests/bench/torch_peer.py",  // build tree
    };
    for (const auto& c : candidates) {
        std::error_code ec;
        if (std::filesystem::is_regular_file(c, ec)) return std::filesystem::weakly_canonical(c, ec).string();
    }
    return {};
}

}  // namespace mantissa::bench
