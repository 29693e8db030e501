// make_backend and backend_availability. The CPU backend is built in. The CUDA backend is a
// module (libmantissa_cuda.so) that the loader in cuda/cuda_loader.* finds and dlopens at run
// time, so the same build starts on a machine without the NVIDIA driver and says why the GPU is
// not offered. That loader is compiled into every build that has engine/backend/cuda
// (MANTISSA_HAVE_CUDA_LOADER); without it, "cuda" is refused with that reason.
//
// The CPU backend's thread count is the experiment's backend.threads, or for 0 this process's
// auto_cpu_threads(): a process-wide number of spare hardware threads, set once by the GUI's main
// (not an environment variable, which the jobs a process starts would inherit).
#include <algorithm>
#include <atomic>
#include <memory>
#include <string>

#include "backend/backend.h"
#include "backend/cpu/cpu_backend.h"
#include "error.h"

#if MANTISSA_HAVE_CUDA_LOADER
#include "backend/cuda/cuda_loader.h"
#endif

namespace mantissa {

namespace {

BackendAvailability cuda_availability() {
#if MANTISSA_HAVE_CUDA_LOADER
    return cuda_backend_availability();
#else
    return {"cuda", false, {}, "this build of Mantissa has no CUDA loader"};
#endif
}

std::unique_ptr<Backend> create_cuda(int device) {
#if MANTISSA_HAVE_CUDA_LOADER
    return make_cuda_backend(device);
#else
    (void)device;
    throw Error("this build of Mantissa has no CUDA loader");
#endif
}

std::atomic<int> spare_cpu_threads{0};

std::unique_ptr<Backend> make_cpu(int threads) {
    auto cpu = std::make_unique<CpuBackend>();
    cpu->matmul().set_threads(threads > 0 ? threads : auto_cpu_threads());
    return cpu;
}

std::string without_final_period(std::string s) {
    while (!s.empty() && (s.back() == '.' || s.back() == ' ')) s.pop_back();
    return s;
}

}  // namespace

std::vector<BackendAvailability> backend_availability() {
    std::vector<BackendAvailability> out;
    out.push_back({"cpu", true, make_cpu(0)->device_name(), {}});
    out.push_back(cuda_availability());
    return out;
}

void set_spare_cpu_threads(int spare) { spare_cpu_threads.store(std::max(0, spare)); }

int auto_cpu_threads() { return CpuMatmul::default_threads(spare_cpu_threads.load()); }

std::unique_ptr<Backend> make_backend(const std::string& name, int device, int cpu_threads) {
    if (name == "cpu") return make_cpu(cpu_threads);
    if (name == "cuda" || name == "auto") {
        const BackendAvailability cuda = cuda_availability();
        if (!cuda.available) {
            if (name == "auto") return make_cpu(cpu_threads);
            throw Error("The CUDA backend cannot be used: " + without_final_period(cuda.reason) + ".");
        }
        try {
            return create_cuda(device);
        } catch (const Error& e) {
            if (name == "auto") return make_cpu(cpu_threads);
            throw Error("The CUDA backend cannot be used: " + without_final_period(e.what()) + ".");
        }
    }
    throw Error("Unknown backend \"" + name + "\": use cpu, cuda or auto.");
}

}  // namespace mantissa
