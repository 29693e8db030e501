// A stand-in for libmantissa_cuda.so with the same entry points (module_abi.h), for
// test_cuda_loader: its answers are chosen at call time by $MANTISSA_CUDA_STUB:
//   two_gpus      a Volta (7.0, too old) and a Hopper (9.0); create fails with a known message
//   turing        one Turing (7.5)
//   old_gpu       one Pascal (6.1) only
//   no_gpu        the driver sees none
//   old_driver    the driver is too old
//   other_abi     reports another interface version
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "backend/cuda/module_abi.h"

namespace mantissa {
class Backend;
}

namespace {

std::string mode() {
    const char* m = std::getenv("MANTISSA_CUDA_STUB");
    return m ? m : "two_gpus";
}

void device(MantissaCudaDevice& d, int index, const char* name, int major, int minor, long long gib) {
    d = MantissaCudaDevice{};
    d.index = index;
    std::snprintf(d.name, sizeof d.name, "%s", name);
    d.cc_major = major;
    d.cc_minor = minor;
    d.total_bytes = gib << 30;
    d.free_bytes = -1;
    d.multiprocessors = 80;
    d.driver_version = 13000;
    d.runtime_version = 13000;
}

}  // namespace

extern "C" int mantissa_cuda_abi_version() {
    return mode() == "other_abi" ? MANTISSA_CUDA_ABI_VERSION + 1 : MANTISSA_CUDA_ABI_VERSION;
}

extern "C" int mantissa_cuda_list_devices(MantissaCudaDevice* out, int capacity, char* error, int len) {
    const std::string m = mode();
    if (m == "no_gpu") return 0;
    if (m == "old_driver") {
        std::snprintf(error, static_cast<std::size_t>(len), "%s",
                      "the NVIDIA driver supports CUDA 12.2, the CUDA module needs 13.0: update the driver");
        return MANTISSA_CUDA_ERR_DRIVER;
    }
    if (m == "old_gpu") {
        if (capacity > 0) device(out[0], 0, "Tesla P100", 6, 1, 16);
        return 1;
    }
    if (m == "turing") {
        if (capacity > 0) device(out[0], 0, "Tesla T4", 7, 5, 16);
        return 1;
    }
    if (capacity > 0) device(out[0], 0, "Tesla V100", 7, 0, 32);
    if (capacity > 1) device(out[1], 1, "NVIDIA H100", 9, 0, 80);
    return 2;
}

extern "C" int mantissa_cuda_probe(char* text, int len) {
    std::snprintf(text, static_cast<std::size_t>(len), "%s", "stub");
    return 1;
}

extern "C" mantissa::Backend* mantissa_cuda_create(int device, char* error, int len) {
    std::snprintf(error, static_cast<std::size_t>(len), "stub module: no backend on GPU %d.", device);
    return nullptr;
}
