// OneDnnConv: one direction of one convolution shape on oneDNN's own convolution primitive (its
// direct, blocked-layout kernels), for CpuBackend's conv2d (cpu_conv.cpp), which falls back to
// im2col and its matmuls where find() gives none.
//
// Why: im2col copies a layer's input k·k times and col2im adds it back, passes at memory speed
// that cost more than the matmul on small images; oneDNN's kernels read the blocked activations
// (nChw16c: 16 channels side by side) in place. Our tensors stay NCHW: each call reorders its
// operands into blocked buffers (single passes; the weights too, they change every step), runs
// the primitive and hands back the blocked result (the forward, whose epilogue is the caller's)
// or reorders it into the caller's NCHW array (dX, dW). The values are the caller's operands,
// already rounded to the compute format; the products are exact and every sum is FP32, as in the
// im2col path: only the order of the sums differs (docs/numerics.md, "Convolutional ops").
//
// Operands of bf16 values (bf16 and fp8 compute: bf16 holds both exactly) may run on oneDNN's
// bf16 kernels instead: the reorders into the blocked buffers convert them to bf16 bits (exact),
// the kernels multiply pairs of them into FP32 sums, and every result is FP32 as before. The
// backend takes them where it takes the bf16 matmul (cpu_bf16_choice.h): the same products, a
// different order of FP32 sums, half the bytes to move, and, on CPUs with AVX-512 BF16, twice the
// multiplies per instruction.
//
// Threads (docs/numerics.md, "Threads"): the forward and the input gradient run on oneDNN's
// threading, a thread per 2^20 multiply-adds as CpuMatmul's products; its kernels give each output
// element to one thread, summed in the same order whatever the count (held on 1, 2 and 3 threads
// by test_backend_cpu_threads_layers). The weight gradient sums over the batch, which oneDNN
// splits over its threads, so it is made thread-invariant here: the batch is cut into chunks of
// whole samples that depend only on the shape and the batch, each chunk's dW is one single-threaded
// primitive (made with one OpenMP thread, run on one of the backend's threads), and the chunks' dWs
// are added in FP32 in chunk order.
//
// Primitives and their reorders are cached per shape, direction and thread count on the calling
// thread (thread_local: a primitive holds no tensor, so backends on one thread share them); the
// blocked buffers are the caller's workspace (CpuBackend's scratch). Training thread only.
#pragma once

#include <compare>
#include <cstdint>
#include <memory>

namespace mantissa {

// A convolution's sizes: a batch of (C, H, W) images, Co output channels, square kernels k,
// stride s, zero padding p (Conv2dGeometry's, with the batch).
struct OneDnnConvDims {
    std::int64_t batch = 0, channels = 0, height = 0, width = 0, out_channels = 0;
    std::int64_t kernel = 1, stride = 1, padding = 0;
    std::int64_t out_h() const { return (height + 2 * padding - kernel) / stride + 1; }
    std::int64_t out_w() const { return (width + 2 * padding - kernel) / stride + 1; }
    auto operator<=>(const OneDnnConvDims&) const = default;
};

// The type of the operands' blocked copies: FP32, or bf16 bits (their values must be bf16 values).
enum class ConvOperands { fp32, bf16 };

// How an activation lies in a blocked buffer: channels in blocks of `block` (1: NCHW), the last
// block padded up to padded_channels; value (n, c, p) of P positions at
// ((n·padded_channels/block + c/block)·P + p)·block + c%block.
struct BlockedLayout {
    std::int64_t block = 1, padded_channels = 0;
};

class OneDnnConv {
public:
    enum class Direction { forward, backward_data, backward_weights };

    // The cached primitive for `direction` on `dims` with up to `threads` threads (>= 1) and
    // `operands` blocked as given, made on first use; null when oneDNN has no direct convolution
    // for it whose activations are NCHW, nChw8c or nChw16c with at most a third of their channels
    // padding (a 1-channel image in nChw16c would multiply 15 zero channels for each real one:
    // im2col is faster there). For bf16 operands, also null where oneDNN has no direct bf16
    // kernel for it.
    static OneDnnConv* find(Direction direction, const OneDnnConvDims& dims, int threads,
                            ConvOperands operands = ConvOperands::fp32);

    ~OneDnnConv();
    OneDnnConv(const OneDnnConv&) = delete;
    OneDnnConv& operator=(const OneDnnConv&) = delete;

    // The floats of workspace the calls below need (their blocked buffers); the workspace is
    // the caller's, 64-byte aligned, kept between calls or not.
    std::int64_t workspace_floats() const;

    // The arrays below are FP32 whatever the operands' type; with bf16 operands, x, w and dy hold
    // bf16 values. forward: y = x ⋆ w into the workspace, returned, in dst_layout(); x (N, C, H, W)
    // and w (Co, C, k, k) plain.
    const float* forward(const float* x, const float* w, float* workspace);
    BlockedLayout dst_layout() const;
    // backward_data: dx (N, C, H, W) = the input gradient of dy (N, Co, oh, ow) through w,
    // overwritten, in FP32.
    void backward_data(const float* dy, const float* w, float* dx, float* workspace);
    // backward_weights: dw (Co, C, k, k) = Σ over the batch of dy ⋆ x, overwritten, in FP32.
    void backward_weights(const float* dy, const float* x, float* dw, float* workspace);

    struct Impl;

private:
    explicit OneDnnConv(std::unique_ptr<Impl> impl);
    std::unique_ptr<Impl> m_impl;
};

}  // namespace mantissa
