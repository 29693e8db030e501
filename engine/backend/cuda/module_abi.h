// The C entry points of libmantissa_cuda.so, shared by the module (cuda_module.cpp) and the loader
// that dlopens it (cuda_loader.cpp). Plain C types only, so the loader needs no CUDA headers, and
// a version number so a module from another build is refused instead of crashing.
//
//   int  mantissa_cuda_abi_version(void);       // == MANTISSA_CUDA_ABI_VERSION
//   int  mantissa_cuda_probe(char* text, int len);
//        1: usable, text = "NVIDIA H200 (compute capability 9.0, 139.8 GiB)" (device 0);
//        0: not usable, text = the reason (no driver, driver too old, no GPU, GPU too old)
//   int  mantissa_cuda_list_devices(MantissaCudaDevice* out, int capacity, char* error, int len);
//        the number of GPUs (at most `capacity` written; 0: none visible), or a negative
//        MANTISSA_CUDA_ERR_* with the reason in `error`
//   mantissa::Backend* mantissa_cuda_create(int device, char* error, int len);
//        a new CUDA backend on that GPU (the caller owns and deletes it), or null with the reason
// Every function catches everything: no exception crosses this boundary.
#pragma once

#ifdef __cplusplus
#include <cstdint>
#else
#include <stdint.h>
#endif

#define MANTISSA_CUDA_ABI_VERSION 4  // 2: Backend::create_pipeline (StepPipeline); 3: the *_impl
                                     // layer ops, unsupported() and the convolutional ops; 4: the
                                     // transformer ops (batched matmul, softmax, layernorm,
                                     // embedding)

// What mantissa_cuda_list_devices returns when it cannot count the GPUs.
#define MANTISSA_CUDA_ERR_OTHER (-1)
#define MANTISSA_CUDA_ERR_DRIVER (-2)  // no driver, or one too old for the module's CUDA runtime
#define MANTISSA_CUDA_ERR_NO_GPU (-3)  // the driver sees no GPU

#ifdef __cplusplus
extern "C" {
#endif

struct MantissaCudaDevice {
    int32_t index;
    char name[256];
    int32_t cc_major;
    int32_t cc_minor;
    int64_t total_bytes;
    int64_t free_bytes;
    int32_t multiprocessors;
    int32_t clock_khz;        // peak SM clock
    int32_t driver_version;   // cudaDriverGetVersion: 13000 = CUDA 13.0
    int32_t runtime_version;  // the module's CUDA runtime
};

typedef int (*MantissaCudaAbiVersionFn)(void);
typedef int (*MantissaCudaProbeFn)(char* text, int len);
typedef int (*MantissaCudaListDevicesFn)(struct MantissaCudaDevice* out, int capacity, char* error, int len);

#ifdef __cplusplus
}
#endif
