// CudaLoader: dlopen of libmantissa_cuda.so and the diagnosis of what is missing (see the header).
//
// Build-time facts arrive as compile definitions set by engine/backend/cuda/CMakeLists.txt:
//   MANTISSA_CUDA_MODULE_BUILT          1 when this build made the module
//   MANTISSA_CUDA_MODULE_BUILD_PATH     the module's path in the build tree
//   MANTISSA_CUDA_MODULE_INSTALL_DIR    where `install` puts it
#include "backend/cuda/cuda_loader.h"

#include <dlfcn.h>
#include <unistd.h>

#include <array>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "backend/cuda/format_support.h"
#include "backend/cuda/module_abi.h"
#include "error.h"

#ifndef MANTISSA_CUDA_MODULE_BUILT
#define MANTISSA_CUDA_MODULE_BUILT 0
#endif

namespace mantissa {

namespace {

constexpr const char* module_file = "libmantissa_cuda.so";

using CreateFn = Backend* (*)(int, char*, int);

std::string directory_of(const std::string& path) {
    const auto slash = path.find_last_of('/');
    return slash == std::string::npos ? std::string(".") : path.substr(0, slash);
}

std::string executable_dir() {
    std::array<char, PATH_MAX> buf{};
    const ssize_t n = readlink("/proc/self/exe", buf.data(), buf.size() - 1);
    if (n <= 0) return {};
    return directory_of(std::string(buf.data(), static_cast<std::size_t>(n)));
}

// The directory of the binary holding this code (the executable, or a shared engine library).
std::string code_dir() {
    Dl_info info{};
    if (dladdr(reinterpret_cast<void*>(&executable_dir), &info) == 0 || !info.dli_fname) return {};
    return directory_of(info.dli_fname);
}

bool exists(const std::string& path) {
    return access(path.c_str(), F_OK) == 0;
}

void push_unique(std::vector<std::string>& v, const std::string& s) {
    for (const auto& e : v)
        if (e == s) return;
    v.push_back(s);
}

std::string joined(const std::vector<std::string>& v) {
    std::string s;
    for (const auto& e : v) s += (s.empty() ? "" : ", ") + e;
    return s;
}

}  // namespace

const char* cuda_missing_name(CudaMissing m) {
    switch (m) {
        case CudaMissing::nothing: return "nothing";
        case CudaMissing::build: return "build";
        case CudaMissing::module: return "module";
        case CudaMissing::libraries: return "libraries";
        case CudaMissing::driver: return "driver";
        case CudaMissing::gpu: return "gpu";
    }
    return "build";
}

std::string CudaDeviceReport::summary() const {
    char mem[32];
    std::snprintf(mem, sizeof mem, "%.1f GiB", static_cast<double>(total_bytes) / (1024.0 * 1024.0 * 1024.0));
    return name + " (compute capability " + std::to_string(cc_major) + "." + std::to_string(cc_minor) + ", " + mem +
           ")";
}

std::vector<std::string> default_cuda_module_paths() {
    std::vector<std::string> paths;
    if (const char* env = std::getenv("MANTISSA_CUDA_MODULE"); env && *env) {
        paths.emplace_back(env);
        return paths;
    }
    const std::string exe = executable_dir();
    if (!exe.empty()) {
        push_unique(paths, exe + "/" + module_file);
        push_unique(paths, exe + "/../lib/mantissa/" + module_file);
    }
    const std::string code = code_dir();
    if (!code.empty() && code != exe) push_unique(paths, code + "/" + module_file);
#ifdef MANTISSA_CUDA_MODULE_INSTALL_DIR
    push_unique(paths, std::string(MANTISSA_CUDA_MODULE_INSTALL_DIR) + "/" + module_file);
#endif
#ifdef MANTISSA_CUDA_MODULE_BUILD_PATH
    push_unique(paths, MANTISSA_CUDA_MODULE_BUILD_PATH);
#endif
    paths.emplace_back(module_file);  // no slash: the dynamic loader's own search
    return paths;
}

CudaLoaderOptions CudaLoaderOptions::defaults() {
    CudaLoaderOptions o;
    o.built_with_cuda = MANTISSA_CUDA_MODULE_BUILT != 0;
    o.module_paths = default_cuda_module_paths();
    return o;
}

CudaLoader::CudaLoader(CudaLoaderOptions options) : m_options(std::move(options)) {}

CudaLoader::~CudaLoader() {
    if (m_keep_loaded) return;
    if (m_module) dlclose(m_module);
    if (m_driver) dlclose(m_driver);
}

const CudaReport& CudaLoader::report() {
    std::lock_guard<std::mutex> lock(m_mutex);
    if (!m_done) {
        load();
        m_done = true;
    }
    return m_report;
}

void CudaLoader::load() {
    CudaReport& r = m_report;
    if (!m_options.built_with_cuda) {
        r.missing = CudaMissing::build;
        r.reason =
            "Mantissa was built without CUDA (configure with -DMANTISSA_CUDA=ON on a machine "
            "with the CUDA 13 toolkit to build the GPU backend)";
        return;
    }

    // 1. The module, but the driver first where the module is a file found: loading the module
    // loads the CUDA runtime and cuBLAS with it (about 150 MB and 0.3 s), which a machine without
    // the NVIDIA driver, most of the machines this program starts on, can never use. A bare name
    // is found only by loading it, so its driver check waits for step 2.
    std::string load_error;
    for (const auto& path : m_options.module_paths) {
        r.searched.push_back(path);
        const bool bare = path.find('/') == std::string::npos;
        if (!bare && !exists(path)) continue;
        if (!bare && !open_driver()) {
            r.module_path = path;  // found, not loaded
            return;
        }
        dlerror();
        m_module = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
        if (m_module) {
            r.module_path = path;
            break;
        }
        const char* e = dlerror();
        const std::string text = e ? e : "unknown error";
        // The bare name not being found is "not found", not a load error.
        if (bare && text.find(path) != std::string::npos &&
            text.find("cannot open shared object file") != std::string::npos)
            continue;
        load_error = path + ": " + text;
        break;
    }
    if (!m_module) {
        if (load_error.empty()) {
            r.missing = CudaMissing::module;
            r.reason = std::string("the CUDA module ") + module_file + " was not found (looked in " +
                       joined(r.searched) + "; set MANTISSA_CUDA_MODULE to its path)";
        } else {
            r.missing = CudaMissing::libraries;
            const bool cublas = load_error.find("libcublas") != std::string::npos;
            const bool cudart = load_error.find("libcudart") != std::string::npos;
            r.reason = std::string("the CUDA module could not be loaded (") + load_error + ")" +
                       (cublas   ? "; the cuBLAS libraries of the CUDA 13 toolkit are missing: install "
                                   "them or add their folder to LD_LIBRARY_PATH"
                        : cudart ? "; the CUDA 13 runtime library is missing"
                                 : "");
        }
        return;
    }
    auto abi = reinterpret_cast<MantissaCudaAbiVersionFn>(dlsym(m_module, "mantissa_cuda_abi_version"));
    auto list = reinterpret_cast<MantissaCudaListDevicesFn>(dlsym(m_module, "mantissa_cuda_list_devices"));
    m_create = dlsym(m_module, "mantissa_cuda_create");
    if (!abi || !list || !m_create) {
        r.missing = CudaMissing::libraries;
        r.reason = r.module_path + " is not a Mantissa CUDA module (its entry points are missing)";
        m_create = nullptr;
        return;
    }
    if (abi() != MANTISSA_CUDA_ABI_VERSION) {
        r.missing = CudaMissing::libraries;
        r.reason = r.module_path + " belongs to another version of Mantissa (interface " + std::to_string(abi()) +
                   ", this program needs " + std::to_string(MANTISSA_CUDA_ABI_VERSION) + ")";
        m_create = nullptr;
        return;
    }

    // 2. The driver, if step 1 did not look for it (a module found by its bare name). The module
    // links the CUDA runtime statically, which loads the driver itself; looking for it here first
    // gives the clearest message.
    if (!open_driver()) {
        m_create = nullptr;
        return;
    }

    // 3. The GPUs.
    std::array<MantissaCudaDevice, 16> devices{};
    std::array<char, 512> error{};
    const int n = list(devices.data(), static_cast<int>(devices.size()), error.data(), static_cast<int>(error.size()));
    if (n < 0) {
        r.missing = n == MANTISSA_CUDA_ERR_DRIVER ? CudaMissing::driver : CudaMissing::gpu;
        r.reason = error.data();
        if (r.reason.empty()) r.reason = "the CUDA runtime could not list the GPUs";
        m_create = nullptr;
        return;
    }
    for (int i = 0; i < n && i < static_cast<int>(devices.size()); ++i) {
        const MantissaCudaDevice& d = devices[static_cast<std::size_t>(i)];
        CudaDeviceReport dev;
        dev.index = d.index;
        dev.name = std::string(d.name, strnlen(d.name, sizeof d.name));
        dev.cc_major = d.cc_major;
        dev.cc_minor = d.cc_minor;
        dev.total_bytes = d.total_bytes;
        dev.free_bytes = d.free_bytes;
        dev.multiprocessors = d.multiprocessors;
        dev.clock_khz = d.clock_khz;
        r.driver_version = d.driver_version;
        r.runtime_version = d.runtime_version;
        const cuda::ComputeCapability cc{d.cc_major, d.cc_minor};
        const cuda::Support s = cuda::device_support(cc);
        dev.usable = s.supported;
        dev.unusable_reason = s.reason;
        for (Format f : all_formats) {
            const cuda::Support fs = cuda::matmul_support(f, cc);
            if (fs.supported)
                dev.formats.push_back(f);
            else if (s.supported)
                dev.refused.emplace_back(f, fs.reason);
        }
        r.devices.push_back(std::move(dev));
    }
    if (r.devices.empty()) {
        r.missing = CudaMissing::gpu;
        r.reason = "the NVIDIA driver sees no GPU";
        if (const char* v = std::getenv("CUDA_VISIBLE_DEVICES"))
            r.reason += std::string(" (CUDA_VISIBLE_DEVICES=") + v + ")";
        m_create = nullptr;
        return;
    }
    bool any_usable = false;
    for (const auto& d : r.devices) any_usable = any_usable || d.usable;
    if (!any_usable) {
        r.missing = CudaMissing::gpu;
        r.reason =
            "no GPU here can run the CUDA module: " + r.devices.front().name + ": " + r.devices.front().unusable_reason;
        m_create = nullptr;
        return;
    }
    r.missing = CudaMissing::nothing;
}

bool CudaLoader::open_driver() {
    if (m_driver) return true;
    dlerror();
    m_driver = dlopen(m_options.driver_library.c_str(), RTLD_LAZY | RTLD_LOCAL);
    if (m_driver) return true;
    const char* e = dlerror();
    m_report.missing = CudaMissing::driver;
    m_report.reason = "the NVIDIA driver is not installed (" + m_options.driver_library +
                      " could not be loaded: " + (e ? e : "not found") + ")";
    return false;
}

std::unique_ptr<Backend> CudaLoader::create(int device) {
    const CudaReport& r = report();
    if (!r.available()) throw Error("The CUDA backend is not available: " + r.reason + ".");
    const CudaDeviceReport* dev = nullptr;
    for (const auto& d : r.devices)
        if (d.index == device) dev = &d;
    if (!dev)
        throw Error("GPU " + std::to_string(device) + " does not exist: this machine has " +
                    std::to_string(r.devices.size()) + " (numbered from 0; `mantissa-cli devices` lists them).");
    if (!dev->usable) throw Error("GPU " + std::to_string(device) + " cannot be used: " + dev->unusable_reason + ".");
    std::array<char, 1024> error{};
    Backend* b = reinterpret_cast<CreateFn>(m_create)(device, error.data(), static_cast<int>(error.size()));
    if (!b) {
        std::string text = error.data();
        while (!text.empty() && text.back() == '.') text.pop_back();
        throw Error("The CUDA backend could not start on GPU " + std::to_string(device) + ": " +
                    (text.empty() ? std::string("unknown error") : text) + ".");
    }
    return std::unique_ptr<Backend>(b);
}

CudaLoader& cuda_loader() {
    static CudaLoader* loader = [] {
        auto* l = new CudaLoader(CudaLoaderOptions::defaults());  // never destroyed: see the header
        l->keep_loaded();
        return l;
    }();
    return *loader;
}

BackendAvailability cuda_backend_availability() {
    BackendAvailability a{"cuda", false, {}, {}};
    const CudaReport& r = cuda_loader().report();
    a.available = r.available();
    if (a.available) {
        for (const auto& d : r.devices)
            if (d.usable) {
                a.device = d.summary();
                break;
            }
    } else {
        a.reason = r.reason;
    }
    return a;
}

std::unique_ptr<Backend> make_cuda_backend(int device) {
    return cuda_loader().create(device);
}

}  // namespace mantissa
