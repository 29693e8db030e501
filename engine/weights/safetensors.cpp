// Safetensors files: the header's checks, the conversions between a dtype's bytes and float values,
// and the atomic writer (see safetensors.h).
#include "weights/safetensors.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <bit>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <limits>
#include <new>
#include <numeric>
#include <set>

#include <zlib.h>
#include <nlohmann/json.hpp>

#include "config/json_text.h"
#include "error.h"
#include "held_files.h"
#include "numeric/convert.h"
#include "printable_text.h"

namespace mantissa {

namespace {

using json = nlohmann::json;

struct DtypeInfo {
    Dtype dtype;
    std::string_view name;
    int bits;
};

// In the enum's order.
constexpr std::array<DtypeInfo, 20> kDtypes = {{
    {Dtype::BOOL, "BOOL", 8},     {Dtype::F4, "F4", 4},         {Dtype::F6_E2M3, "F6_E2M3", 6},
    {Dtype::F6_E3M2, "F6_E3M2", 6}, {Dtype::U8, "U8", 8},       {Dtype::I8, "I8", 8},
    {Dtype::F8_E5M2, "F8_E5M2", 8}, {Dtype::F8_E4M3, "F8_E4M3", 8}, {Dtype::F8_E8M0, "F8_E8M0", 8},
    {Dtype::I16, "I16", 16},      {Dtype::U16, "U16", 16},      {Dtype::F16, "F16", 16},
    {Dtype::BF16, "BF16", 16},    {Dtype::I32, "I32", 32},      {Dtype::U32, "U32", 32},
    {Dtype::F32, "F32", 32},      {Dtype::C64, "C64", 64},      {Dtype::F64, "F64", 64},
    {Dtype::I64, "I64", 64},      {Dtype::U64, "U64", 64},
}};

const DtypeInfo& info(Dtype dtype) { return kDtypes[static_cast<std::size_t>(dtype)]; }

std::string dtype_list() {
    std::string s;
    for (const DtypeInfo& d : kDtypes) s += (s.empty() ? "" : ", ") + std::string(d.name);
    return s;
}

// Little-endian loads and stores of unsigned integers of `n` bytes.
std::uint64_t load_le(const std::uint8_t* p, int n) {
    std::uint64_t v = 0;
    for (int i = n; i-- > 0;) v = (v << 8) | p[i];
    return v;
}
void store_le(std::uint8_t* p, std::uint64_t v, int n) {
    for (int i = 0; i < n; ++i, v >>= 8) p[i] = static_cast<std::uint8_t>(v);
}

std::uint64_t checked_product(std::span<const std::uint64_t> shape, bool& overflow) {
    std::uint64_t n = 1;
    overflow = false;
    for (std::uint64_t d : shape)
        if (__builtin_mul_overflow(n, d, &n)) overflow = true;
    return overflow ? 0 : n;
}

// The nearest FP32 value rounded to odd: x itself when FP32 holds it, else the one of its two
// FP32 neighbours whose last mantissa bit is 1. Rounding that to a format with at least two fewer
// mantissa bits (every format but fp32 itself) to nearest even gives what rounding x directly
// would: no double rounding on the way from F64.
float round_to_odd_fp32(double x) {
    float f = static_cast<float>(x);
    if (!std::isfinite(x) || static_cast<double>(f) == x) return f;
    if (std::fabs(static_cast<double>(f)) > std::fabs(x)) f = std::nextafter(f, 0.0f);  // toward zero
    return std::bit_cast<float>(std::bit_cast<std::uint32_t>(f) | 1u);
}

float round_double_to(Format format, double x) {
    return format == Format::fp32 ? static_cast<float>(x) : round_to(format, round_to_odd_fp32(x));
}

// "[3, 17]": the element at flat `index` of a row-major tensor of `shape`.
std::string index_text(std::uint64_t index, std::span<const std::uint64_t> shape) {
    if (shape.empty()) return "the scalar";
    std::vector<std::uint64_t> at(shape.size());
    for (std::size_t d = shape.size(); d-- > 0;) {
        at[d] = shape[d] ? index % shape[d] : 0;
        index = shape[d] ? index / shape[d] : 0;
    }
    std::string s = "[";
    for (std::size_t d = 0; d < at.size(); ++d) s += (d ? ", " : "") + std::to_string(at[d]);
    return s + "]";
}

// "[0, 100]": a tensor's data_offsets in a sentence.
std::string offsets_text(std::uint64_t begin, std::uint64_t end) {
    std::string s(1, '[');
    s += std::to_string(begin);
    s += ", ";
    s += std::to_string(end);
    s += ']';
    return s;
}

std::string number_text(double v) {
    char buf[40];
    std::snprintf(buf, sizeof buf, "%.9g", v);
    return buf;
}

// What a JSON value is, for a sentence: "a number", "a string".
std::string kind_of(const json& v) {
    switch (v.type()) {
    case json::value_t::null: return "null";
    case json::value_t::boolean: return "a boolean";
    case json::value_t::string: return "a string";
    case json::value_t::array: return "an array";
    case json::value_t::object: return "an object";
    case json::value_t::binary: return "binary data";
    default: return "a number";
    }
}

// A JSON value quoted in a sentence: as JSON, shortened, bytes escaped.
std::string quoted(const json& v) {
    std::string s = v.dump(-1, ' ', false, json::error_handler_t::replace);
    if (s.size() > 60) s = s.substr(0, 57) + "...";
    return printable_text(s);
}

// A whole number >= 0 that fits in 64 bits, or empty.
std::optional<std::uint64_t> as_count(const json& v) {
    if (v.is_number_unsigned()) return v.get<std::uint64_t>();
    if (v.is_number_integer() && v.get<std::int64_t>() >= 0) return static_cast<std::uint64_t>(v.get<std::int64_t>());
    return std::nullopt;
}

// nlohmann's message without its "[json.exception.parse_error.101] " tag, made printable.
std::string parse_error_text(const char* what) {
    std::string s = what;
    if (s.starts_with("[json.exception.")) {
        const auto end = s.find("] ");
        if (end != std::string::npos) s = s.substr(end + 2);
    }
    return printable_text(s);
}

std::string system_error(int err) { return std::strerror(err); }

// Writes all of `data` to `fd`; false (errno set) on failure.
bool write_all(int fd, const std::uint8_t* data, std::size_t n) {
    while (n > 0) {
        const ssize_t w = ::write(fd, data, std::min<std::size_t>(n, std::size_t{1} << 30));
        if (w < 0) {
            if (errno == EINTR) continue;
            return false;
        }
        data += w;
        n -= static_cast<std::size_t>(w);
    }
    return true;
}

}  // namespace

std::string_view dtype_name(Dtype dtype) { return info(dtype).name; }

std::optional<Dtype> parse_dtype(std::string_view name) {
    for (const DtypeInfo& d : kDtypes)
        if (d.name == name) return d.dtype;
    return std::nullopt;
}

int dtype_bits(Dtype dtype) { return info(dtype).bits; }

bool dtype_is_integer(Dtype dtype) {
    switch (dtype) {
    case Dtype::BOOL:
    case Dtype::U8:
    case Dtype::I8:
    case Dtype::I16:
    case Dtype::U16:
    case Dtype::I32:
    case Dtype::U32:
    case Dtype::I64:
    case Dtype::U64: return true;
    default: return false;
    }
}

Dtype dtype_of(Format format) {
    switch (format) {
    case Format::fp16: return Dtype::F16;
    case Format::bf16: return Dtype::BF16;
    case Format::fp8_e4m3: return Dtype::F8_E4M3;
    case Format::fp8_e5m2: return Dtype::F8_E5M2;
    default: return Dtype::F32;  // fp32, and tf32 (FP32 values with a shorter mantissa)
    }
}

std::optional<Format> format_of(Dtype dtype) {
    switch (dtype) {
    case Dtype::F32: return Format::fp32;
    case Dtype::F16: return Format::fp16;
    case Dtype::BF16: return Format::bf16;
    case Dtype::F8_E4M3: return Format::fp8_e4m3;
    case Dtype::F8_E5M2: return Format::fp8_e5m2;
    default: return std::nullopt;
    }
}

std::uint64_t SafetensorsEntry::elements() const {
    bool overflow = false;
    return checked_product(shape, overflow);
}

std::uint32_t crc32_of(std::span<const std::uint8_t> bytes) {
    uLong crc = ::crc32(0L, Z_NULL, 0);
    // zlib takes a 32-bit length: a tensor of 4 GiB or more goes in pieces.
    constexpr std::size_t piece = std::size_t{1} << 30;
    for (std::size_t at = 0; at < bytes.size(); at += piece)
        crc = ::crc32(crc, bytes.data() + at, static_cast<uInt>(std::min(piece, bytes.size() - at)));
    return static_cast<std::uint32_t>(crc);
}

std::string shape_text(std::span<const std::uint64_t> shape) {
    std::string s = "(";
    for (std::size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
    return s + ")";
}

std::string shape_text(std::span<const std::int64_t> shape) {
    std::string s = "(";
    for (std::size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
    return s + ")";
}

// ---- reading

SafetensorsFile::SafetensorsFile(const std::string& path)
    : m_path(path), m_file(open_user_file(path, "The safetensors file " + printable_text(path))) {
    const std::string file = printable_text(path);
    const auto refuse = [&](const std::string& what) { throw SafetensorsFormatError(file + ": " + what + "."); };
    m_size = user_file_size(m_file);
    if (m_size < 8)
        refuse("it is " + std::to_string(m_size) + (m_size == 1 ? " byte" : " bytes") +
               " long, too short for a safetensors file, whose header's length alone takes 8 bytes");
    std::array<std::uint8_t, 8> length{};
    read_at(0, length.data(), 8, "the header's length");
    const std::uint64_t n = load_le(length.data(), 8);
    if (n > kSafetensorsHeaderLimit)
        refuse("its header claims " + std::to_string(n) + " bytes, more than " +
               std::to_string(kSafetensorsHeaderLimit) +
               ", the limit of the safetensors format; it is not a safetensors file, or it is damaged");
    if (n > m_size - 8)
        refuse("its header claims " + std::to_string(n) + " bytes, but the file holds " + std::to_string(m_size - 8) +
               " after the header's length; it is cut short, or not a safetensors file");
    m_data_start = 8 + n;
    const std::uint64_t data_size = m_size - m_data_start;

    std::string header(static_cast<std::size_t>(n), '\0');
    read_at(8, reinterpret_cast<std::uint8_t*>(header.data()), n, "the header");
    for (std::size_t i = 0; i < header.size();) {
        const std::size_t len = utf8_char_length(header, i);
        if (len == 0) {
            char byte[8];
            std::snprintf(byte, sizeof byte, "0x%02X", static_cast<unsigned char>(header[i]));
            refuse(std::string("its header is not UTF-8 text (byte ") + byte + " at offset " + std::to_string(i) +
                   " of the header); it is not a safetensors file, or it is damaged");
        }
        i += len;
    }

    // nlohmann's parser takes a NUL byte for the end of the text; JSON holds none, raw.
    if (const auto nul = header.find('\0'); nul != std::string::npos)
        refuse("its header is not JSON: it holds a NUL byte at offset " + std::to_string(nul) +
               " of the header (a safetensors header is padded with spaces)");

    // Parsed with a callback that refuses a key twice in one object (json::parse would keep the
    // last) and nesting deeper than the reference reader's limit.
    std::vector<std::set<std::string>> keys;  // the keys seen in each object open at the moment
    std::string object_of_key;                // for the sentence: the tensor whose entry is open
    json j;
    try {
        j = json::parse(
            header,
            [&](int depth, json::parse_event_t event, json& parsed) {
                if (depth > 128) refuse("its header nests JSON more than 128 levels deep");
                if (event == json::parse_event_t::object_start) keys.emplace_back();
                else if (event == json::parse_event_t::object_end) keys.pop_back();
                else if (event == json::parse_event_t::key) {
                    const std::string& key = parsed.get_ref<const std::string&>();
                    if (depth == 1) object_of_key = key;
                    if (!keys.back().insert(key).second) {
                        if (depth == 1) refuse("its header names \"" + printable_text(key) + "\" twice");
                        refuse("the entry of \"" + printable_text(object_of_key) + "\" names \"" +
                               printable_text(key) + "\" twice");
                    }
                }
                return true;
            },
            true, false);
    } catch (const json::exception& e) {
        // Told as an experiment file's mistake is (config/json_text.h: where, and what was found);
        // the library's own text where that reader takes the header (a comment, which it allows).
        json ignored;
        const JsonProblem problem = parse_json(header, ignored);
        refuse("its header is not JSON: " + (problem.found ? problem.sentence : parse_error_text(e.what())));
    } catch (const std::bad_alloc&) {
        // Not the bytes' fault: a plain Error, which no reader takes for damage.
        throw Error(file + ": there is not enough memory to read its header of " + std::to_string(n) + " bytes.");
    }
    if (!j.is_object()) refuse("its header is " + kind_of(j) + ", not a JSON object of tensors");

    for (const auto& [key, value] : j.items()) {
        const std::string name = printable_text(key);
        if (key == "__metadata__") {
            if (value.is_null()) continue;
            if (!value.is_object())
                refuse("its \"__metadata__\" is " + kind_of(value) + ", not an object of strings");
            for (const auto& [k, v] : value.items()) {
                if (!v.is_string())
                    refuse("its \"__metadata__\" holds " + kind_of(v) + " for \"" + printable_text(k) +
                           "\"; its values must be strings");
                m_metadata.emplace(k, v.get<std::string>());
            }
            continue;
        }
        const std::string tensor = "tensor " + name;
        if (!value.is_object())
            refuse(tensor + "'s entry is " + kind_of(value) +
                   ", not an object {\"dtype\": ..., \"shape\": [...], \"data_offsets\": [begin, end]}");
        for (const char* required : {"dtype", "shape", "data_offsets"})
            if (!value.contains(required)) refuse(tensor + " has no \"" + required + "\"");
        SafetensorsEntry e;
        e.name = key;
        const json& dtype = value.at("dtype");
        if (!dtype.is_string())
            refuse(tensor + "'s \"dtype\" is " + kind_of(dtype) + ", not a string such as \"F32\"");
        const std::optional<Dtype> d = parse_dtype(dtype.get_ref<const std::string&>());
        if (!d)
            refuse(tensor + " has the dtype " + quoted(dtype) + ", which the safetensors format does not define (it "
                   "defines " + dtype_list() + ")");
        e.dtype = *d;
        const json& shape = value.at("shape");
        if (!shape.is_array()) refuse(tensor + "'s \"shape\" is " + kind_of(shape) + ", not an array of sizes");
        for (const json& s : shape) {
            const std::optional<std::uint64_t> size = as_count(s);
            if (!size) refuse(tensor + "'s shape " + quoted(shape) + " holds " + quoted(s) + ", not a whole number >= 0");
            e.shape.push_back(*size);
        }
        const json& offsets = value.at("data_offsets");
        if (!offsets.is_array() || offsets.size() != 2 || !as_count(offsets[0]) || !as_count(offsets[1]))
            refuse(tensor + "'s data_offsets " + quoted(offsets) + " are not two whole numbers [begin, end] >= 0");
        e.begin = *as_count(offsets[0]);
        e.end = *as_count(offsets[1]);
        const std::string range = offsets_text(e.begin, e.end);
        if (e.end < e.begin) refuse(tensor + "'s data_offsets " + range + " end before they begin");
        bool overflow = false;
        const std::uint64_t elements = checked_product(e.shape, overflow);
        std::uint64_t bits = 0;
        if (overflow || __builtin_mul_overflow(elements, static_cast<std::uint64_t>(dtype_bits(e.dtype)), &bits))
            refuse(tensor + "'s shape " + shape_text(e.shape) + " has more elements of " +
                   std::string(dtype_name(e.dtype)) + " than 64 bits can count");
        if (bits % 8 != 0)
            refuse(tensor + "'s " + std::to_string(elements) + " " + std::string(dtype_name(e.dtype)) + " values take " +
                   std::to_string(bits) + " bits, not a whole number of bytes");
        if (e.end > data_size)
            refuse(tensor + "'s data_offsets " + range + " reach beyond the " + std::to_string(data_size) +
                   " bytes of data the file holds after its header");
        if (e.end - e.begin != bits / 8)
            refuse(tensor + "'s data_offsets " + range + " hold " + std::to_string(e.end - e.begin) +
                   " bytes but " + std::string(dtype_name(e.dtype)) + " " + shape_text(e.shape) + " needs " +
                   std::to_string(bits / 8));
        m_entries.push_back(std::move(e));
    }

    // The entries must tile the data: sorted by offsets, each begins where the one before ends.
    std::sort(m_entries.begin(), m_entries.end(), [](const SafetensorsEntry& a, const SafetensorsEntry& b) {
        if (a.begin != b.begin) return a.begin < b.begin;
        return a.end != b.end ? a.end < b.end : a.name < b.name;
    });
    const auto offsets_of = [](const SafetensorsEntry& e) { return offsets_text(e.begin, e.end); };
    std::uint64_t at = 0;
    for (std::size_t i = 0; i < m_entries.size(); ++i) {
        const SafetensorsEntry& e = m_entries[i];
        if (e.begin < at)
            refuse("tensor " + printable_text(e.name) + "'s data_offsets " + offsets_of(e) + " overlap tensor " +
                   printable_text(m_entries[i - 1].name) + "'s " + offsets_of(m_entries[i - 1]));
        if (e.begin > at)
            refuse("bytes " + std::to_string(at) + " to " + std::to_string(e.begin) +
                   " of its data belong to no tensor (a gap before tensor " + printable_text(e.name) + "'s data_offsets " +
                   offsets_of(e) + ")");
        at = e.end;
    }
    if (at != data_size)
        refuse("it holds " + std::to_string(data_size) + " bytes of data after its header, but its tensors end at byte " +
               std::to_string(at) + "; the last " + std::to_string(data_size - at) + " belong to no tensor");
}

const SafetensorsEntry* SafetensorsFile::find(std::string_view name) const {
    for (const SafetensorsEntry& e : m_entries)
        if (e.name == name) return &e;
    return nullptr;
}

void SafetensorsFile::read_at(std::uint64_t offset, std::uint8_t* out, std::uint64_t n, const std::string& what) const {
    while (n > 0) {
        const ssize_t r = ::pread(m_file.fd(), out, static_cast<std::size_t>(std::min<std::uint64_t>(n, 1u << 30)),
                                  static_cast<off_t>(offset));
        if (r < 0) {
            if (errno == EINTR) continue;
            const int err = errno;
            throw Error(printable_text(m_path) + ": reading " + what + " failed: " + system_error(err) + ".");
        }
        if (r == 0)
            throw Error(printable_text(m_path) + ": the file ended at byte " + std::to_string(offset) + " while " + what +
                        " was read; it changed while it was being read.");
        out += r;
        offset += static_cast<std::uint64_t>(r);
        n -= static_cast<std::uint64_t>(r);
    }
}

std::vector<std::uint8_t> SafetensorsFile::read_bytes(const SafetensorsEntry& entry) const {
    std::vector<std::uint8_t> bytes;
    try {
        bytes.resize(static_cast<std::size_t>(entry.bytes()));
    } catch (const std::bad_alloc&) {
        throw Error("Not enough memory to read tensor " + printable_text(entry.name) + " of " + printable_text(m_path) +
                    " (" + std::to_string(entry.bytes()) + " bytes).");
    }
    read_at(m_data_start + entry.begin, bytes.data(), entry.bytes(), "tensor " + printable_text(entry.name));
    return bytes;
}

std::uint32_t SafetensorsFile::crc32_of(const SafetensorsEntry& entry) const {
    constexpr std::uint64_t piece = std::uint64_t{4} << 20;
    std::vector<std::uint8_t> buffer(static_cast<std::size_t>(std::min(entry.bytes(), piece)));
    uLong crc = ::crc32(0L, Z_NULL, 0);
    const std::string what = "tensor " + printable_text(entry.name);
    for (std::uint64_t at = 0; at < entry.bytes(); at += piece) {
        const std::uint64_t n = std::min(piece, entry.bytes() - at);
        read_at(m_data_start + entry.begin + at, buffer.data(), n, what);
        crc = ::crc32(crc, buffer.data(), static_cast<uInt>(n));
    }
    return static_cast<std::uint32_t>(crc);
}

std::vector<float> SafetensorsFile::read_values(const SafetensorsEntry& entry, Format format) const {
    const std::string tensor = printable_text(m_path) + ": tensor " + printable_text(entry.name);
    const std::optional<Format> exact = format_of(entry.dtype);
    if (!exact && entry.dtype != Dtype::F64)
        throw Error(tensor + " holds " + std::string(dtype_name(entry.dtype)) +
                    " values, and real numbers are needed here (F32, F16, BF16, F8_E4M3, F8_E5M2 or F64).");
    const std::vector<std::uint8_t> bytes = read_bytes(entry);
    const std::size_t n = static_cast<std::size_t>(entry.elements());
    std::vector<float> values;
    try {
        values.resize(n);
    } catch (const std::bad_alloc&) {
        throw Error("Not enough memory to read " + tensor + " (" + std::to_string(n) + " values).");
    }
    const FormatInfo& target = format_info(format);
    const auto overflowed = [&](std::size_t i, double value) {
        throw Error(tensor + " holds " + number_text(value) + " at " + index_text(i, entry.shape) + ", beyond " +
                    std::string(target.name) + "'s largest finite value " + number_text(target.max_finite) +
                    ", the format it is stored in.");
    };
    if (entry.dtype == Dtype::F64) {
        for (std::size_t i = 0; i < n; ++i) {
            const double x = std::bit_cast<double>(load_le(bytes.data() + 8 * i, 8));
            values[i] = round_double_to(format, x);
            if (std::isfinite(x) && !std::isfinite(values[i])) overflowed(i, x);
        }
        return values;
    }
    const int size = dtype_bits(entry.dtype) / 8;
    for (std::size_t i = 0; i < n; ++i) {
        const auto bits = static_cast<std::uint32_t>(load_le(bytes.data() + size * i, size));
        const float x = *exact == Format::fp32 ? std::bit_cast<float>(bits) : decode(*exact, bits);
        values[i] = format == *exact ? x : round_to(format, x);
        if (std::isfinite(x) && !std::isfinite(values[i])) overflowed(i, x);
    }
    return values;
}

std::vector<std::int64_t> SafetensorsFile::read_integers(const SafetensorsEntry& entry) const {
    const std::string tensor = printable_text(m_path) + ": tensor " + printable_text(entry.name);
    if (!dtype_is_integer(entry.dtype))
        throw Error(tensor + " holds " + std::string(dtype_name(entry.dtype)) + " values, and whole numbers are needed "
                    "here (an integer dtype such as I64).");
    const std::vector<std::uint8_t> bytes = read_bytes(entry);
    const int size = dtype_bits(entry.dtype) / 8;
    const bool is_signed = entry.dtype == Dtype::I8 || entry.dtype == Dtype::I16 || entry.dtype == Dtype::I32 ||
                           entry.dtype == Dtype::I64;
    std::vector<std::int64_t> values(static_cast<std::size_t>(entry.elements()));
    for (std::size_t i = 0; i < values.size(); ++i) {
        const std::uint64_t raw = load_le(bytes.data() + size * i, size);
        if (is_signed) {
            const int shift = 64 - 8 * size;  // sign-extend from the dtype's width
            values[i] = static_cast<std::int64_t>(raw << shift) >> shift;
        } else {
            if (raw > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()))
                throw Error(tensor + " holds " + std::to_string(raw) + " at " + index_text(i, entry.shape) +
                            ", beyond the largest whole number Mantissa reads (2^63 - 1).");
            values[i] = static_cast<std::int64_t>(raw);
        }
    }
    return values;
}

// ---- writing

SafetensorsTensor safetensors_tensor(std::string name, Dtype dtype, std::vector<std::uint64_t> shape,
                                     std::span<const float> values) {
    bool overflow = false;
    const std::uint64_t elements = checked_product(shape, overflow);
    if (overflow || elements != values.size())
        throw Error("Tensor " + printable_text(name) + " of shape " + shape_text(shape) + " was given " +
                    std::to_string(values.size()) + " values.");
    const std::optional<Format> format = format_of(dtype);
    if (!format && dtype != Dtype::F64)
        throw Error("Tensor " + printable_text(name) + ": float values cannot be written as " +
                    std::string(dtype_name(dtype)) + "; use F32, F16, BF16, F8_E4M3, F8_E5M2 or F64.");
    SafetensorsTensor t{std::move(name), dtype, std::move(shape), {}};
    const int size = dtype_bits(dtype) / 8;
    t.bytes.resize(values.size() * static_cast<std::size_t>(size));
    for (std::size_t i = 0; i < values.size(); ++i) {
        const std::uint64_t bits = dtype == Dtype::F64   ? std::bit_cast<std::uint64_t>(static_cast<double>(values[i]))
                                   : dtype == Dtype::F32 ? std::bit_cast<std::uint32_t>(values[i])
                                                         : encode(*format, values[i]);
        store_le(t.bytes.data() + size * i, bits, size);
    }
    return t;
}

void write_safetensors(const std::string& path, std::vector<SafetensorsTensor> tensors,
                       const std::map<std::string, std::string>& metadata) {
    const std::string file = printable_text(path);
    const auto refuse = [&](const std::string& what) {
        throw Error("Cannot write the safetensors file " + file + ": " + what + ".");
    };
    const auto utf8 = [](std::string_view s) {
        for (std::size_t i = 0; i < s.size();) {
            const std::size_t n = utf8_char_length(s, i);
            if (n == 0) return false;
            i += n;
        }
        return true;
    };
    std::set<std::string_view> names;
    for (const SafetensorsTensor& t : tensors) {
        const std::string name = printable_text(t.name);
        if (t.name == "__metadata__") refuse("\"__metadata__\" names the metadata, not a tensor");
        if (!utf8(t.name)) refuse("the tensor name " + name + " is not UTF-8");
        if (!names.insert(t.name).second) refuse("two tensors are named " + name);
        bool overflow = false;
        const std::uint64_t elements = checked_product(t.shape, overflow);
        std::uint64_t bits = 0;
        if (overflow || __builtin_mul_overflow(elements, static_cast<std::uint64_t>(dtype_bits(t.dtype)), &bits) ||
            bits % 8 != 0 || bits / 8 != t.bytes.size())
            refuse("tensor " + name + " holds " + std::to_string(t.bytes.size()) + " bytes, which is not what " +
                   std::string(dtype_name(t.dtype)) + " " + shape_text(t.shape) + " takes");
    }
    for (const auto& [k, v] : metadata)
        if (!utf8(k) || !utf8(v)) refuse("the metadata entry " + printable_text(k) + " is not UTF-8");

    // Largest elements first, then by name: every tensor then starts at a multiple of its element
    // size (the header is padded to 8 bytes), as safetensors.torch.save_file lays them out.
    std::sort(tensors.begin(), tensors.end(), [](const SafetensorsTensor& a, const SafetensorsTensor& b) {
        return a.dtype != b.dtype ? a.dtype > b.dtype : a.name < b.name;
    });
    std::string header = "{";
    if (!metadata.empty()) header += "\"__metadata__\":" + json(metadata).dump();
    std::uint64_t offset = 0;
    for (const SafetensorsTensor& t : tensors) {
        if (header.size() > 1) header += ",";
        header += json(t.name).dump() + ":{\"dtype\":\"" + std::string(dtype_name(t.dtype)) + "\",\"shape\":" +
                  json(t.shape).dump() + ",\"data_offsets\":[" + std::to_string(offset) + "," +
                  std::to_string(offset + t.bytes.size()) + "]}";
        offset += t.bytes.size();
    }
    header += "}";
    header.append((8 - header.size() % 8) % 8, ' ');
    if (header.size() > kSafetensorsHeaderLimit)
        refuse("its header would take " + std::to_string(header.size()) + " bytes, more than the format's limit of " +
               std::to_string(kSafetensorsHeaderLimit));

    if (HeldFiles::instance().held(path))
        refuse("it is a run store that Mantissa has open (or a file SQLite keeps beside one); choose another file");
    struct stat st {};
    if (::stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode)) refuse("it exists and is not a regular file");

    // A name of this process's own beside the target; O_EXCL so nothing already there is reused.
    static std::atomic<unsigned> counter{0};
    std::string partial;
    int fd = -1;
    for (int attempt = 0; fd < 0; ++attempt) {
        partial = path + ".partial-" + std::to_string(::getpid()) + "-" + std::to_string(counter++);
        fd = ::open(partial.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
        if (fd < 0 && (errno != EEXIST || attempt > 100)) refuse(system_error(errno));
    }
    const auto fail = [&](int err) {
        ::close(fd);
        ::unlink(partial.c_str());
        refuse(system_error(err));
    };
    std::array<std::uint8_t, 8> length{};
    store_le(length.data(), header.size(), 8);
    if (!write_all(fd, length.data(), length.size()) ||
        !write_all(fd, reinterpret_cast<const std::uint8_t*>(header.data()), header.size()))
        fail(errno);
    for (const SafetensorsTensor& t : tensors)
        if (!write_all(fd, t.bytes.data(), t.bytes.size())) fail(errno);
    if (::fsync(fd) != 0) fail(errno);
    if (::close(fd) != 0) {
        const int err = errno;
        ::unlink(partial.c_str());
        refuse(system_error(err));
    }
    if (::rename(partial.c_str(), path.c_str()) != 0) {
        const int err = errno;
        ::unlink(partial.c_str());
        refuse(system_error(err));
    }
    // The rename itself reaches the disk with the folder's entry.
    const std::filesystem::path parent = std::filesystem::path(path).parent_path();
    const int dir = ::open(parent.empty() ? "." : parent.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dir >= 0) {
        ::fsync(dir);
        ::close(dir);
    }
}

}  // namespace mantissa
