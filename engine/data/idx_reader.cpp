// The IDX reader (see idx_reader.h). A file is: 4 magic bytes (0, 0, type, number of dimensions),
// one big-endian uint32 per dimension, then the data, row-major. Only the unsigned-byte type (0x08)
// is accepted, which is what MNIST and Fashion-MNIST use. The order of checks matters: the header
// is validated and the declared size bounded before any buffer of that size exists.
#include "data/idx_reader.h"

#include <zlib.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <system_error>

#include "data/user_file.h"
#include "error.h"

namespace mantissa::data {
namespace {

namespace fs = std::filesystem;

std::string hex32(std::uint32_t v) {
    char buf[16];
    std::snprintf(buf, sizeof buf, "0x%08X", v);
    return buf;
}

// An open gzFile, closed on scope exit. Reads raw files transparently.
class GzReader {
public:
    explicit GzReader(const std::string& path) : m_path(path) {
        // Only a regular file (open_user_file says why not); zlib then owns the descriptor.
        UserFile file = open_user_file(path, "The IDX file " + path);
        errno = 0;
        m_file = gzdopen(file.fd(), "rb");
        if (!m_file) {
            const int err = errno;
            throw Error("Cannot open the IDX file " + path + ": " + (err ? std::strerror(err) : "out of memory") + ".");
        }
        file.release();
        gzbuffer(m_file, 1u << 18);  // larger than the 8 KiB default: fewer, bigger reads
    }
    ~GzReader() { gzclose(m_file); }
    GzReader(const GzReader&) = delete;
    GzReader& operator=(const GzReader&) = delete;

    // Reads up to n bytes into dst; returns how many were read (fewer only at the end of the data).
    // A corrupt gzip stream throws; a gzip stream that simply stops early is a short read.
    std::uint64_t read(std::uint8_t* dst, std::uint64_t n) {
        std::uint64_t got = 0;
        while (got < n) {
            const auto chunk = static_cast<unsigned>(std::min<std::uint64_t>(n - got, 1u << 30));
            const int r = gzread(m_file, dst + got, chunk);
            if (r < 0) {
                const int err = errno;
                int code = 0;
                std::string msg = gzerror(m_file, &code);
                if (code == Z_ERRNO) {
                    msg = std::strerror(err);
                } else {
                    // zlib starts its message with the file's name ("<fd:3>: invalid block type"):
                    // the sentence names the file already.
                    if (const auto colon = msg.find(": "); colon != std::string::npos) msg.erase(0, colon + 2);
                }
                throw Error("The IDX file " + m_path + " cannot be read: " + msg + " (a corrupt gzip stream?).");
            }
            if (r == 0) break;
            got += static_cast<std::uint64_t>(r);
        }
        return got;
    }

    // True when the file is not gzipped (zlib is copying it through); valid after the first read.
    bool is_raw() { return gzdirect(m_file) != 0; }

    // True when the gzip stream ended before its end marker.
    bool ended_early() {
        int code = 0;
        gzerror(m_file, &code);
        return code == Z_BUF_ERROR;
    }

private:
    std::string m_path;
    gzFile m_file = nullptr;
};

struct IdxHeader {
    std::vector<std::uint32_t> dims;
    std::uint64_t payload = 0;  // declared data bytes: the product of dims
    std::uint64_t header_bytes = 0;
};

// Reads and checks the header: magic (0, 0, 0x08, ndims), then ndims dimensions, each non-zero,
// whose product must not exceed kMaxIdxBytes.
IdxHeader read_header(GzReader& in, const std::string& path, std::uint8_t ndims, const char* what) {
    const std::uint32_t expected_magic = 0x0800u | ndims;
    std::array<std::uint8_t, 4> magic{};
    const std::uint64_t got = in.read(magic.data(), 4);
    if (got < 4)
        throw Error("The IDX file " + path + " is truncated: it ends after " + std::to_string(got) +
                    " bytes, inside its 4-byte magic number.");
    const std::uint32_t m =
        (std::uint32_t{magic[0]} << 24) | (std::uint32_t{magic[1]} << 16) | (std::uint32_t{magic[2]} << 8) | magic[3];
    if (m != expected_magic)
        throw Error("The file " + path + " is not an IDX " + what + " file: its magic number is " + hex32(m) +
                    ", expected " + hex32(expected_magic) + " (unsigned bytes, " + std::to_string(ndims) +
                    (ndims == 1 ? " dimension)." : " dimensions)."));

    IdxHeader h;
    h.header_bytes = 4 + 4u * ndims;
    std::vector<std::uint8_t> raw(4u * ndims);
    const std::uint64_t dims_got = in.read(raw.data(), raw.size());
    if (dims_got < raw.size())
        throw Error("The IDX file " + path + " is truncated: its header declares " + std::to_string(ndims) +
                    " dimensions (" + std::to_string(raw.size()) + " bytes) but only " + std::to_string(dims_got) +
                    " bytes of them are there.");
    h.dims.resize(ndims);
    h.payload = 1;
    bool over = false;
    for (std::size_t i = 0; i < ndims; ++i) {
        const std::uint8_t* b = raw.data() + 4 * i;
        h.dims[i] = (std::uint32_t{b[0]} << 24) | (std::uint32_t{b[1]} << 16) | (std::uint32_t{b[2]} << 8) | b[3];
        if (h.dims[i] == 0)
            throw Error("The IDX file " + path + " declares dimension " + std::to_string(i + 1) +
                        " as 0: it holds no data.");
        // Checked before multiplying, so the product cannot overflow.
        if (over || h.payload > kMaxIdxBytes / h.dims[i])
            over = true;
        else
            h.payload *= h.dims[i];
    }
    if (over) {
        std::string shape;
        for (std::size_t i = 0; i < ndims; ++i) shape += (i ? " x " : "") + std::to_string(h.dims[i]);
        throw Error("The IDX file " + path + " declares an absurd size (" + shape + " bytes), over the limit of " +
                    std::to_string(kMaxIdxBytes) + " bytes; it was refused before reading.");
    }
    return h;
}

// Reads exactly the declared payload and checks that nothing follows it.
std::vector<std::uint8_t> read_payload(GzReader& in, const std::string& path, const IdxHeader& h) {
    const std::uint64_t expected_total = h.header_bytes + h.payload;
    auto truncated = [&](std::uint64_t found_total, bool gz_early) {
        return Error("The IDX file " + path + " is truncated: its header declares " + std::to_string(expected_total) +
                     " bytes in all, but " + std::to_string(found_total) + " bytes were found" +
                     (gz_early ? " (the gzip stream ends early)." : "."));
    };
    auto too_long = [&] {
        return Error("The IDX file " + path + " is longer than its header declares (" + std::to_string(expected_total) +
                     " bytes): its dimensions do not match its data.");
    };
    // A raw file's length is known up front: check it before allocating anything.
    std::error_code ec;
    if (in.is_raw()) {
        const auto size = fs::file_size(path, ec);
        if (!ec && size < expected_total) throw truncated(size, false);
        if (!ec && size > expected_total) throw too_long();
    }

    // Gzipped data is only known by reading it: grow the buffer as data arrives, so a lying header
    // costs no more memory than the data really present.
    std::vector<std::uint8_t> bytes;
    std::uint64_t got = 0;
    std::uint64_t step = std::min<std::uint64_t>(h.payload, std::uint64_t{64} << 20);
    while (got < h.payload) {
        const std::uint64_t want = std::min(step, h.payload - got);
        bytes.resize(got + want);
        const std::uint64_t r = in.read(bytes.data() + got, want);
        got += r;
        if (r < want) break;
        step = std::min<std::uint64_t>(step * 2, std::uint64_t{512} << 20);
    }
    if (got < h.payload) throw truncated(h.header_bytes + got, in.ended_early());

    std::uint8_t extra = 0;
    if (in.read(&extra, 1) != 0) throw too_long();
    return bytes;
}

std::string file_name(const std::string& path) {
    return fs::path(path).filename().string();
}

}  // namespace

IdxImages read_idx_images(const std::string& path) {
    GzReader in(path);
    const IdxHeader h = read_header(in, path, 3, "image");
    const std::vector<std::uint8_t> bytes = read_payload(in, path, h);

    IdxImages images;
    images.count = h.dims[0];
    images.rows = static_cast<int>(h.dims[1]);  // each < 2^31 by the size limit
    images.cols = static_cast<int>(h.dims[2]);
    // byte / 255 in fp32, as torchvision's ToTensor computes it (a division, not a multiply by
    // 1/255, which differs in the last bit for some bytes); the loop vectorises.
    images.pixels.resize(bytes.size());
    const std::uint8_t* src = bytes.data();
    float* dst = images.pixels.data();
    for (std::size_t i = 0, n = bytes.size(); i < n; ++i) dst[i] = static_cast<float>(src[i]) / 255.0f;
    return images;
}

std::vector<std::int32_t> read_idx_labels(const std::string& path, int classes) {
    GzReader in(path);
    const IdxHeader h = read_header(in, path, 1, "label");
    const std::vector<std::uint8_t> bytes = read_payload(in, path, h);
    std::vector<std::int32_t> labels(bytes.begin(), bytes.end());
    for (std::size_t i = 0; i < labels.size(); ++i)
        if (labels[i] >= classes)
            throw Error("The IDX label file " + path + " holds label " + std::to_string(labels[i]) + " at index " +
                        std::to_string(i) + ", out of range: labels must be 0.." + std::to_string(classes - 1) + ".");
    return labels;
}

std::string find_idx_file(const std::string& folder, const std::string& base) {
    std::error_code ec;
    const fs::path raw = fs::path(folder) / base;
    if (fs::is_regular_file(raw, ec)) return raw.string();
    fs::path gz = raw;
    gz += ".gz";
    if (fs::is_regular_file(gz, ec)) return gz.string();
    return {};
}

std::vector<std::string> missing_idx_files(const std::string& folder) {
    std::vector<std::string> missing;
    for (const char* base : {kIdxTrainImages, kIdxTrainLabels, kIdxTestImages, kIdxTestLabels})
        if (find_idx_file(folder, base).empty()) missing.emplace_back(base);
    return missing;
}

Dataset read_idx_folder(const std::string& folder, const std::string& name) {
    std::error_code ec;
    if (!fs::is_directory(folder, ec)) {
        if (fs::exists(folder, ec))
            throw Error("dataset.path " + folder +
                        " is a file, not a folder; kind 'idx' reads a folder holding the four IDX files.");
        throw Error("The IDX dataset folder " + folder + " does not exist (dataset.path).");
    }
    const std::vector<std::string> missing = missing_idx_files(folder);
    if (!missing.empty())
        throw Error("The IDX dataset folder " + folder + " lacks " + missing.front() + " (or " + missing.front() +
                    ".gz); it needs " + kIdxTrainImages + ", " + kIdxTrainLabels + ", " + kIdxTestImages + " and " +
                    kIdxTestLabels + ".");

    Dataset data;
    data.name = name;
    data.classes = kIdxClasses;
    data.outputs = kIdxClasses;
    int rows = 0, cols = 0;
    const struct {
        const char* images;
        const char* labels;
        Split* split;
    } parts[] = {{kIdxTrainImages, kIdxTrainLabels, &data.train}, {kIdxTestImages, kIdxTestLabels, &data.test}};
    for (const auto& part : parts) {
        const std::string images_path = find_idx_file(folder, part.images);
        const std::string labels_path = find_idx_file(folder, part.labels);
        IdxImages images = read_idx_images(images_path);
        std::vector<std::int32_t> labels = read_idx_labels(labels_path, kIdxClasses);
        if (static_cast<std::int64_t>(labels.size()) != images.count)
            throw Error("The IDX label file " + labels_path + " holds " + std::to_string(labels.size()) +
                        " labels but " + file_name(images_path) + " holds " + std::to_string(images.count) +
                        " images; the counts must match.");
        if (rows == 0) {
            rows = images.rows;
            cols = images.cols;
        } else if (images.rows != rows || images.cols != cols) {
            throw Error("The IDX image file " + images_path + " holds " + std::to_string(images.rows) + "x" +
                        std::to_string(images.cols) + " images but the training images are " + std::to_string(rows) +
                        "x" + std::to_string(cols) + ".");
        }
        part.split->rows = images.count;
        part.split->x = std::move(images.pixels);
        part.split->y = std::move(labels);
    }
    const std::int64_t features = std::int64_t{rows} * cols;
    if (features > INT32_MAX)
        throw Error("The IDX images in " + folder + " have " + std::to_string(features) +
                    " pixels each, too many features.");
    data.features = static_cast<int>(features);
    return data;
}

}  // namespace mantissa::data
