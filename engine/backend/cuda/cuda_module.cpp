// The C entry points of libmantissa_cuda.so (module_abi.h): the only symbols the module exports.
// Each catches everything and reports through its error buffer: no exception and no CUDA type
// crosses the boundary, so the loader (cuda_loader.cpp) needs no CUDA headers.
#include <cuda_runtime_api.h>

#include <cstdio>
#include <cstring>
#include <exception>
#include <string>

#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/format_support.h"
#include "backend/cuda/module_abi.h"

#define MANTISSA_EXPORT extern "C" __attribute__((visibility("default")))

namespace {

void write_text(char* buf, int len, const std::string& text) {
    if (!buf || len <= 0) return;
    std::snprintf(buf, static_cast<std::size_t>(len), "%s", text.c_str());
}

std::string version_text(int v) {
    return std::to_string(v / 1000) + "." + std::to_string((v % 1000) / 10);
}

// The GPUs, or a negative MANTISSA_CUDA_ERR_* with the reason.
int list_devices(MantissaCudaDevice* out, int capacity, std::string& reason) {
    int runtime = 0, driver = 0;
    cudaRuntimeGetVersion(&runtime);
    cudaDriverGetVersion(&driver);
    int count = 0;
    const cudaError_t e = cudaGetDeviceCount(&count);
    if (e != cudaSuccess) {
        cudaGetLastError();
        if (e == cudaErrorInsufficientDriver || e == cudaErrorCompatNotSupportedOnDevice) {
            reason = driver == 0 ? "the NVIDIA driver is not installed or could not be loaded"
                                 : "the NVIDIA driver supports CUDA " + version_text(driver) +
                                       ", the CUDA module needs " + version_text(runtime) + ": update the driver";
            return MANTISSA_CUDA_ERR_DRIVER;
        }
        if (e == cudaErrorNoDevice) {
            reason = "the NVIDIA driver sees no GPU";
            return MANTISSA_CUDA_ERR_NO_GPU;
        }
        reason = std::string("the CUDA runtime could not count the GPUs: ") + cudaGetErrorName(e) + " (" +
                 cudaGetErrorString(e) + ")";
        return MANTISSA_CUDA_ERR_OTHER;
    }
    for (int i = 0; i < count && i < capacity; ++i) {
        cudaDeviceProp prop{};
        if (cudaGetDeviceProperties(&prop, i) != cudaSuccess) {
            cudaGetLastError();
            continue;
        }
        MantissaCudaDevice& d = out[i];
        d = MantissaCudaDevice{};
        d.index = i;
        std::snprintf(d.name, sizeof d.name, "%s", prop.name);
        d.cc_major = prop.major;
        d.cc_minor = prop.minor;
        d.total_bytes = static_cast<std::int64_t>(prop.totalGlobalMem);
        d.free_bytes = -1;  // would need a context on every GPU
        d.multiprocessors = prop.multiProcessorCount;
        int clock = 0;
        if (cudaDeviceGetAttribute(&clock, cudaDevAttrClockRate, i) == cudaSuccess) d.clock_khz = clock;
        d.driver_version = driver;
        d.runtime_version = runtime;
    }
    return count;
}

}  // namespace

MANTISSA_EXPORT int mantissa_cuda_abi_version() {
    return MANTISSA_CUDA_ABI_VERSION;
}

MANTISSA_EXPORT int mantissa_cuda_list_devices(MantissaCudaDevice* out, int capacity, char* error, int len) {
    try {
        std::string reason;
        const int n = list_devices(out, capacity, reason);
        if (n < 0) write_text(error, len, reason);
        return n;
    } catch (const std::exception& e) {
        write_text(error, len, e.what());
    } catch (...) {
        write_text(error, len, "unknown error while listing the GPUs");
    }
    return MANTISSA_CUDA_ERR_OTHER;
}

MANTISSA_EXPORT int mantissa_cuda_probe(char* text, int len) {
    try {
        MantissaCudaDevice devices[16];
        std::string reason;
        const int n = list_devices(devices, 16, reason);
        if (n < 0) {
            write_text(text, len, reason);
            return 0;
        }
        if (n == 0) {
            write_text(text, len, "the NVIDIA driver sees no GPU");
            return 0;
        }
        for (int i = 0; i < n && i < 16; ++i) {
            const mantissa::cuda::ComputeCapability cc{devices[i].cc_major, devices[i].cc_minor};
            if (!mantissa::cuda::device_support(cc).supported) continue;
            char mem[32];
            std::snprintf(mem, sizeof mem, "%.1f GiB",
                          static_cast<double>(devices[i].total_bytes) / (1024.0 * 1024.0 * 1024.0));
            write_text(text, len,
                       std::string(devices[i].name) + " (compute capability " + cc.text() + ", " + mem + ")");
            return 1;
        }
        write_text(text, len,
                   std::string(devices[0].name) + ": " +
                       mantissa::cuda::device_support({devices[0].cc_major, devices[0].cc_minor}).reason);
        return 0;
    } catch (const std::exception& e) {
        write_text(text, len, e.what());
    } catch (...) {
        write_text(text, len, "unknown error while probing the GPUs");
    }
    return 0;
}

MANTISSA_EXPORT mantissa::Backend* mantissa_cuda_create(int device, char* error, int len) {
    try {
        return new mantissa::cuda::CudaBackend(device);
    } catch (const std::exception& e) {
        write_text(error, len, e.what());
    } catch (...) {
        write_text(error, len, "unknown error while starting the CUDA backend");
    }
    return nullptr;
}
