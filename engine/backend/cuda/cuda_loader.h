// The host side of the CUDA backend: finds libmantissa_cuda.so, loads it with dlopen and says
// precisely what is missing when the GPU cannot be offered: the build (made without CUDA), the
// module, the NVIDIA driver (looked for before a module file found is loaded: the module loads
// the CUDA runtime and cuBLAS), the CUDA libraries it needs, or a usable GPU. Compiled into
// mantissa_core in every build (it needs no CUDA headers), so the application starts everywhere.
//
// Where the module is looked for, in order (default_cuda_module_paths):
//   $MANTISSA_CUDA_MODULE (when set, the only place looked at), next to the running executable,
//   ../lib/mantissa beside it (installed layout), the install library directory, the build tree
//   (builds made with CUDA), then the dynamic loader's own search (LD_LIBRARY_PATH).
// The module stays loaded for the life of the process: backends made from it may outlive any
// caller. Thread-safe: the process-wide loader probes once under a lock.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "backend/backend.h"

namespace mantissa {

enum class CudaMissing : std::uint8_t {
    nothing,    // usable
    build,      // Mantissa was built without CUDA
    module,     // libmantissa_cuda.so was not found
    libraries,  // it was found but could not be loaded (CUDA 13 libraries missing, or another build)
    driver,     // the NVIDIA driver (libcuda.so.1) is missing or too old
    gpu,        // no GPU visible, or none the module supports
};
const char* cuda_missing_name(CudaMissing m);  // "nothing", "build", "module", ...

struct CudaDeviceReport {
    int index = 0;
    std::string name;
    int cc_major = 0, cc_minor = 0;
    std::int64_t total_bytes = 0, free_bytes = 0;
    int multiprocessors = 0;
    int clock_khz = 0;
    bool usable = false;
    std::string unusable_reason;                          // when not usable
    std::vector<Format> formats;                          // matmul formats it supports
    std::vector<std::pair<Format, std::string>> refused;  // the others, each with its reason
    std::string summary() const;                          // "NVIDIA H200 (compute capability 9.0, 139.8 GiB)"
};

struct CudaReport {
    CudaMissing missing = CudaMissing::build;
    std::string reason;                 // one sentence when missing != nothing
    std::string module_path;            // the module found: loaded, unless the driver is missing
    std::vector<std::string> searched;  // where it was looked for
    int driver_version = 0;             // 13000 = CUDA 13.0; 0 when unknown
    int runtime_version = 0;
    std::vector<CudaDeviceReport> devices;
    bool available() const { return missing == CudaMissing::nothing; }
};

struct CudaLoaderOptions {
    bool built_with_cuda = false;
    std::vector<std::string> module_paths;  // tried in order
    std::string driver_library = "libcuda.so.1";
    // The options of this build: built_with_cuda from the configuration, the default paths.
    static CudaLoaderOptions defaults();
};

// The default search list (see the file comment); $MANTISSA_CUDA_MODULE alone when it is set.
std::vector<std::string> default_cuda_module_paths();

class CudaLoader {
public:
    explicit CudaLoader(CudaLoaderOptions options);
    ~CudaLoader();  // unloads the module unless it is the process-wide loader's
    CudaLoader(const CudaLoader&) = delete;
    CudaLoader& operator=(const CudaLoader&) = delete;

    // Loads and probes on the first call; the same report afterwards.
    const CudaReport& report();
    // A CUDA backend on GPU `device`; throws mantissa::Error with the reason when it cannot.
    std::unique_ptr<Backend> create(int device);

    void keep_loaded() { m_keep_loaded = true; }

private:
    void load();
    bool open_driver();  // loads the driver library once; false with the report's reason when it cannot

    CudaLoaderOptions m_options;
    std::mutex m_mutex;
    bool m_done = false;
    bool m_keep_loaded = false;
    CudaReport m_report;
    void* m_module = nullptr;
    void* m_driver = nullptr;
    void* m_create = nullptr;  // mantissa_cuda_create
};

// The process-wide loader (default options, never unloaded).
CudaLoader& cuda_loader();

// For backend_availability() and make_backend(): the "cuda" entry, and a backend on `device`.
BackendAvailability cuda_backend_availability();
std::unique_ptr<Backend> make_cuda_backend(int device);

}  // namespace mantissa
