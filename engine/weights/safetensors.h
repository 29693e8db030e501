// Safetensors files: the format PyTorch users keep weights in (safetensors.torch.save_file), read
// and written from its definition (docs/weights.md, "The file format"):
//   8 bytes   N, the header's length: an unsigned 64-bit integer, little-endian
//   N bytes   the header, JSON text in UTF-8: an object mapping each tensor's name to
//             {"dtype": "F32", "shape": [256, 784], "data_offsets": [begin, end]}, and an optional
//             "__metadata__" object of string values; writers pad it with spaces to a multiple of 8
//   the rest  the data: each tensor row-major and little-endian at [begin, end) of this region; the
//             tensors tile it (no gap, no overlap, nothing after the last)
// Reading checks the whole header against the file's size before it reads or allocates for any
// tensor, so a file that claims more than it holds costs nothing, and every refusal is a
// mantissa::Error of one sentence that names the file and what is wrong with it. Writing is atomic:
// a temporary file beside the target, synced, then renamed over it.
//
// Plain C++ with no backend (the library mantissa_weights), so the fuzz target compiles it alone.
// Objects are not shared between threads; the functions are safe to call from any thread.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "error.h"
#include "numeric/format.h"
#include "user_file.h"

namespace mantissa {

// The element types the format defines, in its order of increasing size (a writer lays tensors out
// largest element first, so each starts at a multiple of its own element size).
enum class Dtype : std::uint8_t {
    BOOL, F4, F6_E2M3, F6_E3M2, U8, I8, F8_E5M2, F8_E4M3, F8_E8M0, I16, U16, F16, BF16, I32, U32, F32, C64, F64,
    I64, U64
};

std::string_view dtype_name(Dtype dtype);                  // "F32", as the header spells it
std::optional<Dtype> parse_dtype(std::string_view name);  // exact spelling; empty when unknown
int dtype_bits(Dtype dtype);                              // bits one element takes: F4 4, F32 32
bool dtype_is_integer(Dtype dtype);                       // BOOL, U8 .. U64, I8 .. I64
// The dtype a tensor of `format` is written as: fp32 and tf32 (FP32 values) F32, fp16 F16, bf16
// BF16, fp8-e4m3 F8_E4M3 (PyTorch's float8_e4m3fn), fp8-e5m2 F8_E5M2 (float8_e5m2).
Dtype dtype_of(Format format);
// The format whose values a dtype holds exactly: F32, F16, BF16, F8_E4M3, F8_E5M2; empty for others.
std::optional<Format> format_of(Dtype dtype);

// The largest header a reader accepts, as the format's reference implementation limits it.
inline constexpr std::uint64_t kSafetensorsHeaderLimit = 100'000'000;

// One tensor as the header describes it.
struct SafetensorsEntry {
    std::string name;
    Dtype dtype = Dtype::F32;
    std::vector<std::uint64_t> shape;  // () for a scalar
    std::uint64_t begin = 0, end = 0;  // data_offsets: bytes, relative to the start of the data
    std::uint64_t elements() const;    // the shape's product (1 for a scalar)
    std::uint64_t bytes() const { return end - begin; }
};

// The CRC-32 of `bytes`: zlib's crc32, the same number as Python's zlib.crc32 (a checkpoint keeps one
// per tensor, weights/checkpoint_info.h).
std::uint32_t crc32_of(std::span<const std::uint8_t> bytes);

// "(256, 784)", "(10)", "()": how sentences write a shape.
std::string shape_text(std::span<const std::uint64_t> shape);
std::string shape_text(std::span<const std::int64_t> shape);

// What SafetensorsFile's constructor throws when the bytes are not a well-formed safetensors file
// (cut short, a header that is not JSON, tensors that do not fit the data), as opposed to a file
// that cannot be opened or read: in a file Mantissa wrote itself, a checkpoint, that is damage
// (train/checkpoint.h).
class SafetensorsFormatError : public Error {
public:
    using Error::Error;
};

// A safetensors file opened for reading, its header checked whole.
class SafetensorsFile {
public:
    // Opens `path` (a regular file, user_file.h) and checks its header against the file's size:
    // the header's length, UTF-8, JSON, an object; each entry's keys and their types, its dtype,
    // its shape (whole numbers, a product that fits in 64 bits, a whole number of bytes), its
    // data_offsets (as many bytes as dtype and shape need); the entries tiling the data; no name
    // or key twice; "__metadata__" an object of strings. Reads no tensor's data. Throws
    // SafetensorsFormatError for what is wrong in the bytes, mantissa::Error for the rest.
    explicit SafetensorsFile(const std::string& path);

    const std::string& path() const { return m_path; }
    // Every tensor, in the order of their data in the file.
    const std::vector<SafetensorsEntry>& entries() const { return m_entries; }
    const std::map<std::string, std::string>& metadata() const { return m_metadata; }
    const SafetensorsEntry* find(std::string_view name) const;

    // The entry's bytes as the file holds them (any dtype).
    std::vector<std::uint8_t> read_bytes(const SafetensorsEntry& entry) const;
    // The CRC-32 (crc32_of) of the entry's bytes as the file holds them, read in pieces of at most
    // 4 MiB, so a large tensor costs no copy of itself.
    std::uint32_t crc32_of(const SafetensorsEntry& entry) const;
    // The entry's values as values of `format`: F32, F16, BF16, F8_E4M3 and F8_E5M2 values are
    // exact in FP32 and rounded once to `format` (to nearest, ties to even; exact when the format
    // holds them), F64 values are rounded once to `format` the same way (never twice through
    // FP32). A finite value that overflows `format` is refused, naming the tensor, the element and
    // the value; inf and NaN stay what they are (NaN in fp8-e4m3 for inf). Integer dtypes and the
    // others that hold no real numbers (C64, F4, F6_*, F8_E8M0) are refused with a sentence.
    std::vector<float> read_values(const SafetensorsEntry& entry, Format format = Format::fp32) const;
    // An integer entry's values (BOOL, U8 .. U64, I8 .. I64); a U64 beyond 2^63 - 1 is refused,
    // as is a dtype that is not an integer.
    std::vector<std::int64_t> read_integers(const SafetensorsEntry& entry) const;

private:
    void read_at(std::uint64_t offset, std::uint8_t* out, std::uint64_t n, const std::string& what) const;

    std::string m_path;
    UserFile m_file;
    std::uint64_t m_size = 0;        // the file's size when it was opened
    std::uint64_t m_data_start = 0;  // 8 + N
    std::vector<SafetensorsEntry> m_entries;
    std::map<std::string, std::string> m_metadata;
};

// One tensor to write: its name, dtype, shape and bytes (row-major, little-endian, exactly the
// shape's elements × the dtype's size).
struct SafetensorsTensor {
    std::string name;
    Dtype dtype = Dtype::F32;
    std::vector<std::uint64_t> shape;
    std::vector<std::uint8_t> bytes;
};

// A tensor of `dtype` from float values, each rounded to the dtype (to nearest, ties to even;
// exact for values the dtype holds, so a tensor's own values are written exactly): F32, F16,
// BF16, F8_E4M3, F8_E5M2, F64. Throws mantissa::Error for other dtypes, or when `values` does not
// hold the shape's elements.
SafetensorsTensor safetensors_tensor(std::string name, Dtype dtype, std::vector<std::uint64_t> shape,
                                     std::span<const float> values);

// Writes `tensors` and `metadata` to `path` as a safetensors file, atomically: into a temporary
// file beside it, flushed to the disk (fsync), then renamed over `path`, so a reader sees the old
// file or the whole new one. The data is laid out as safetensors.torch.save_file lays it out:
// by element size, largest first, then by name; the header lists the tensors in that order after
// "__metadata__" (left out when empty), padded with spaces to a multiple of 8 bytes. Throws
// mantissa::Error naming the file when a name is repeated, "__metadata__" or not UTF-8, a tensor's bytes
// do not fit its shape, `path` is a run store this process holds, or writing fails.
void write_safetensors(const std::string& path, std::vector<SafetensorsTensor> tensors,
                       const std::map<std::string, std::string>& metadata = {});

}  // namespace mantissa
