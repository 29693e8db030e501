// The IDX reader (see idx_reader.h). A file is: 4 magic bytes (0, 0, type, number of dimensions),
// one big-endian uint32 per dimension, then the data, row-major. Only the unsigned-byte type (0x08)
// is accepted, which is what MNIST and Fashion-MNIST use.
//
// The order of checks is the point of this file. Opening an IdxFile reads its header only (a gzip
// file inflates just those bytes) and checks what is known without the data: the declared size
// against kMaxIdxBytes, and against the file: a raw file's length must match it exactly; a gzip
// file must be large enough to inflate to it (deflate packs at most about 1032 bytes into one) and
// its trailer's stated length is compared with it. A folder opens all four files, compares the
// counts and image sizes their headers declare and the memory the data will take with what this
// process may use, and only then reads any data, in 1 MiB chunks converted as they arrive. So a
// header that lies costs neither the time to inflate a gigabyte nor the memory to hold it.
#include "data/idx_reader.h"

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>
#include <new>
#include <optional>
#include <tuple>
#include <utility>

#include "data/dataset_folder.h"
#include "data/gzip_input.h"
#include "data/memory_budget.h"
#include "user_file.h"
#include "error.h"
#include "huge_pages.h"

namespace mantissa::data {
namespace {

namespace fs = std::filesystem;

constexpr std::uint64_t kChunk = std::uint64_t{1} << 20;  // bytes read and converted at a time

std::string hex32(std::uint32_t v) {
    char buf[16];
    std::snprintf(buf, sizeof buf, "0x%08X", v);
    return buf;
}

std::string file_name(const std::string& path) {
    return fs::path(path).filename().string();
}

// One IDX file, opened and its header read and checked; its data not yet read.
class IdxFile {
public:
    // ndims: 3 for images, 1 for labels; what: "image" or "label", for messages.
    IdxFile(const std::string& path, std::uint8_t ndims, const char* what) : m_path(path), m_what(what) {
        UserFile file = open_user_file(path, "The IDX file " + path);
        if (starts_like_gzip(file)) {
            m_gz = std::make_unique<GzipInput>(std::move(file), "The IDX file " + path);
        } else {
            m_raw_size = user_file_size(file);
            m_raw = std::make_unique<UserFile>(std::move(file));
        }
        read_header(ndims);
        check_size_against_file();
    }

    const std::string& path() const { return m_path; }
    const std::vector<std::uint32_t>& dims() const { return m_dims; }
    std::uint64_t payload() const { return m_payload; }
    std::uint64_t total() const { return m_header_bytes + m_payload; }

    // Reads the data in chunks, handing each to `take(bytes, count)`; then checks that nothing
    // follows it (and, for gzip, that the trailer matches).
    template <class Take>
    void read_data(Take take) {
        // Uninitialised: every byte handed on has been read into first.
        const auto size = static_cast<std::size_t>(std::clamp<std::uint64_t>(m_payload, 1, kChunk));
        const auto chunk = std::make_unique_for_overwrite<std::uint8_t[]>(size);
        std::uint64_t got = 0;
        while (got < m_payload) {
            const std::uint64_t want = std::min<std::uint64_t>(size, m_payload - got);
            const std::uint64_t r = read(chunk.get(), want);
            take(chunk.get(), static_cast<std::size_t>(r));
            got += r;
            if (r < want) break;
        }
        if (got < m_payload) {
            // The file's last bytes, its gzip trailer, state the declared length: the file is whole
            // and its deflate data is what is wrong (a cut file's last bytes would be deflate data,
            // which states that length by chance only once in 2^32).
            if (m_gz && m_gz->ended_early() && m_size_known) throw damaged_stream(m_header_bytes + got);
            throw truncated(m_header_bytes + got, m_gz && m_gz->ended_early());
        }
        std::uint8_t extra = 0;
        if (read(&extra, 1) != 0) throw too_long();
    }

    // True when the data's length is known before reading (a raw file, or a gzip file whose
    // trailer states the declared length), so the whole buffer can be allocated at once.
    bool size_known() const { return m_size_known; }

private:
    std::uint64_t read(std::uint8_t* dst, std::uint64_t n) {
        if (m_gz) return m_gz->read(dst, n);
        std::uint64_t got = 0;
        while (got < n) {
            const ssize_t r = ::read(m_raw->fd(), dst + got, static_cast<std::size_t>(std::min<std::uint64_t>(n - got, 1u << 30)));
            if (r < 0 && errno == EINTR) continue;
            if (r < 0) {
                const int err = errno;
                throw Error("The IDX file " + m_path + " cannot be read: " + std::strerror(err) + ".");
            }
            if (r == 0) break;
            got += static_cast<std::uint64_t>(r);
        }
        return got;
    }

    // Reads and checks the header: magic (0, 0, 0x08, ndims), then ndims dimensions, each
    // non-zero, whose product must not exceed kMaxIdxBytes.
    void read_header(std::uint8_t ndims) {
        const std::uint32_t expected_magic = 0x0800u | ndims;
        std::array<std::uint8_t, 4> magic{};
        const std::uint64_t got = read(magic.data(), 4);
        if (got < 4)
            throw Error("The IDX file " + m_path + " is truncated: it ends after " + std::to_string(got) +
                        " bytes, inside its 4-byte magic number.");
        const std::uint32_t m = (std::uint32_t{magic[0]} << 24) | (std::uint32_t{magic[1]} << 16) |
                                (std::uint32_t{magic[2]} << 8) | magic[3];
        if (m != expected_magic)
            throw Error("The file " + m_path + " is not an IDX " + m_what + " file: its magic number is " + hex32(m) +
                        ", expected " + hex32(expected_magic) + " (unsigned bytes, " + std::to_string(ndims) +
                        (ndims == 1 ? " dimension)." : " dimensions)."));

        m_header_bytes = 4 + 4u * ndims;
        std::vector<std::uint8_t> raw(4u * ndims);
        const std::uint64_t dims_got = read(raw.data(), raw.size());
        if (dims_got < raw.size())
            throw Error("The IDX file " + m_path + " is truncated: its header declares " + std::to_string(ndims) +
                        " dimensions (" + std::to_string(raw.size()) + " bytes) but only " + std::to_string(dims_got) +
                        " bytes of them are there.");
        m_dims.resize(ndims);
        m_payload = 1;
        bool over = false;
        for (std::size_t i = 0; i < ndims; ++i) {
            const std::uint8_t* b = raw.data() + 4 * i;
            m_dims[i] = (std::uint32_t{b[0]} << 24) | (std::uint32_t{b[1]} << 16) | (std::uint32_t{b[2]} << 8) | b[3];
            if (m_dims[i] == 0)
                throw Error("The IDX file " + m_path + " declares dimension " + std::to_string(i + 1) +
                            " as 0: it holds no data.");
            // Checked before multiplying, so the product cannot overflow.
            if (over || m_payload > kMaxIdxBytes / m_dims[i])
                over = true;
            else
                m_payload *= m_dims[i];
        }
        if (over) {
            std::string shape;
            for (std::size_t i = 0; i < ndims; ++i) shape += (i ? " x " : "") + std::to_string(m_dims[i]);
            throw Error("The IDX file " + m_path + " declares an absurd size (" + shape + " bytes), over the limit of " +
                        std::to_string(kMaxIdxBytes) + " bytes; it was refused before reading.");
        }
    }

    // What the file's size says about the declared size, before any data is read.
    void check_size_against_file() {
        if (m_raw) {
            if (m_raw_size < total()) throw truncated(m_raw_size, false);
            if (m_raw_size > total()) throw too_long();
            m_size_known = true;
            return;
        }
        if (total() > m_gz->max_inflated_size())
            throw Error("The IDX file " + m_path + " is truncated or damaged: its header declares " +
                        std::to_string(total()) + " bytes in all, more than its " +
                        std::to_string(m_gz->file_size()) +
                        " bytes of gzip data can hold (deflate packs at most about 1032 bytes into one); it was "
                        "refused before inflating.");
        // A trailer that states another length means a damaged or cut file (or a header that lies):
        // the data is then read without trusting either, into buffers that grow as it arrives.
        const std::optional<std::uint32_t> stated = m_gz->stated_size();
        m_size_known = stated && *stated == static_cast<std::uint32_t>(total());
    }

    Error truncated(std::uint64_t found_total, bool gz_early) const {
        return Error("The IDX file " + m_path + " is truncated: its header declares " + std::to_string(total()) +
                     " bytes in all, but " + std::to_string(found_total) + " bytes were found" +
                     (gz_early ? " (the gzip stream ends early)." : "."));
    }
    Error damaged_stream(std::uint64_t found_total) const {
        return Error("The IDX file " + m_path + " is damaged: its gzip trailer states the " + std::to_string(total()) +
                     " bytes its header declares, but its deflate data ends after " + std::to_string(found_total) +
                     " bytes without the end-of-stream mark.");
    }
    Error too_long() const {
        return Error("The IDX file " + m_path + " is longer than its header declares (" + std::to_string(total()) +
                     " bytes): its dimensions do not match its data.");
    }

    std::string m_path;
    const char* m_what;
    std::unique_ptr<GzipInput> m_gz;
    std::unique_ptr<UserFile> m_raw;
    std::uint64_t m_raw_size = 0;
    std::vector<std::uint32_t> m_dims;
    std::uint64_t m_payload = 0;  // declared data bytes: the product of dims
    std::uint64_t m_header_bytes = 0;
    bool m_size_known = false;
};

// Appends to `out` as data arrives. When the size is known the whole buffer is reserved at once;
// otherwise it grows (at most doubling, never past the declared size) only as data really comes, so
// a header that lies costs no more memory than the data present.
template <class T>
void reserve_for(std::vector<T>& out, std::uint64_t declared, std::size_t more) {
    const std::size_t need = out.size() + more;
    if (need <= out.capacity()) return;
    const std::uint64_t grown = std::max<std::uint64_t>(std::uint64_t{out.capacity()} * 2, kChunk);
    out.reserve(static_cast<std::size_t>(std::max<std::uint64_t>(need, std::min(grown, declared))));
}

IdxImages read_images(IdxFile& file) {
    IdxImages images;
    images.count = file.dims()[0];
    images.rows = static_cast<int>(file.dims()[1]);  // each < 2^31 by the size limit
    images.cols = static_cast<int>(file.dims()[2]);
    const std::uint64_t declared = file.payload();
    if (file.size_known()) reserve_in_huge_pages(images.pixels, static_cast<std::size_t>(declared));
    // byte / 255 in fp32, as torchvision's ToTensor computes it (a division, not a multiply by
    // 1/255, which differs in the last bit for some bytes); the loop vectorises.
    file.read_data([&](const std::uint8_t* src, std::size_t n) {
        reserve_for(images.pixels, declared, n);
        const std::size_t at = images.pixels.size();
        images.pixels.resize(at + n);
        float* dst = images.pixels.data() + at;
        for (std::size_t i = 0; i < n; ++i) dst[i] = static_cast<float>(src[i]) / 255.0f;
    });
    return images;
}

std::vector<std::int32_t> read_labels(IdxFile& file, int classes) {
    std::vector<std::int32_t> labels;
    const std::uint64_t declared = file.payload();
    if (file.size_known()) labels.reserve(static_cast<std::size_t>(declared));
    file.read_data([&](const std::uint8_t* src, std::size_t n) {
        reserve_for(labels, declared, n);
        labels.insert(labels.end(), src, src + n);
    });
    for (std::size_t i = 0; i < labels.size(); ++i)
        if (labels[i] >= classes)
            throw Error("The IDX label file " + file.path() + " holds label " + std::to_string(labels[i]) +
                        " at index " + std::to_string(i) + ", out of range: labels must be 0.." +
                        std::to_string(classes - 1) + ".");
    return labels;
}

// Runs `read`, turning an allocation that fails (a limit the budget did not see, another process
// taking memory meanwhile) into a sentence about `path`.
template <class Read>
auto with_memory_sentence(const std::string& path, std::uint64_t bytes, Read read) {
    try {
        return read();
    } catch (const std::bad_alloc&) {
        throw Error("Not enough memory to read the IDX file " + path + " (about " + memory_text(bytes) +
                    " as 32-bit values); free some memory or use a smaller dataset.");
    }
}

}  // namespace

IdxImages read_idx_images(const std::string& path) {
    IdxFile file(path, 3, "image");
    const std::uint64_t bytes = file.payload() * sizeof(float);
    check_memory(bytes, "The IDX image file " + path);
    return with_memory_sentence(path, bytes, [&] { return read_images(file); });
}

std::vector<std::int32_t> read_idx_labels(const std::string& path, int classes) {
    IdxFile file(path, 1, "label");
    const std::uint64_t bytes = file.payload() * sizeof(std::int32_t);
    check_memory(bytes, "The IDX label file " + path);
    return with_memory_sentence(path, bytes, [&] { return read_labels(file, classes); });
}

std::string find_idx_file(const std::string& folder, const std::string& base) {
    const fs::path raw = fs::path(folder) / base;
    if (user_file_exists(raw.string(), "The IDX file " + raw.string())) return raw.string();
    fs::path gz = raw;
    gz += ".gz";
    if (user_file_exists(gz.string(), "The IDX file " + gz.string())) return gz.string();
    return {};
}

std::vector<std::string> missing_idx_files(const std::string& folder) {
    std::vector<std::string> missing;
    for (const char* base : {kIdxTrainImages, kIdxTrainLabels, kIdxTestImages, kIdxTestLabels})
        if (find_idx_file(folder, base).empty()) missing.emplace_back(base);
    return missing;
}

bool idx_folder_exists(const std::string& folder, const std::string& kind) {
    return dataset_folder_exists(folder, kind, "the four IDX files");
}

Dataset read_idx_folder(const std::string& folder, const std::string& name) {
    if (!idx_folder_exists(folder, name))
        throw Error("The IDX dataset folder " + folder + " does not exist (dataset.path).");
    const std::vector<std::string> missing = missing_idx_files(folder);
    if (!missing.empty())
        throw Error("The IDX dataset folder " + folder + " lacks " + missing.front() + " (or " + missing.front() +
                    ".gz); it needs " + kIdxTrainImages + ", " + kIdxTrainLabels + ", " + kIdxTestImages + " and " +
                    kIdxTestLabels + ".");

    // Every header first: what they declare must agree before any data is read.
    IdxFile train_images(find_idx_file(folder, kIdxTrainImages), 3, "image");
    IdxFile train_labels(find_idx_file(folder, kIdxTrainLabels), 1, "label");
    IdxFile test_images(find_idx_file(folder, kIdxTestImages), 3, "image");
    IdxFile test_labels(find_idx_file(folder, kIdxTestLabels), 1, "label");
    for (const auto& [images, labels] : {std::pair{&train_images, &train_labels}, std::pair{&test_images, &test_labels}})
        if (labels->dims()[0] != images->dims()[0])
            throw Error("The IDX label file " + labels->path() + " declares " + std::to_string(labels->dims()[0]) +
                        " labels but " + file_name(images->path()) + " declares " + std::to_string(images->dims()[0]) +
                        " images; the counts must match.");
    const std::uint32_t rows = train_images.dims()[1], cols = train_images.dims()[2];
    if (test_images.dims()[1] != rows || test_images.dims()[2] != cols)
        throw Error("The IDX image file " + test_images.path() + " holds " + std::to_string(test_images.dims()[1]) +
                    "x" + std::to_string(test_images.dims()[2]) + " images but the training images are " +
                    std::to_string(rows) + "x" + std::to_string(cols) + ".");
    const std::uint64_t features = std::uint64_t{rows} * cols;
    if (features > INT32_MAX)
        throw Error("The IDX images in " + folder + " have " + std::to_string(features) +
                    " pixels each, too many features.");
    // 32-bit floats for pixels and 32-bit labels; normalisation works in place.
    const std::uint64_t bytes = (train_images.payload() + test_images.payload() + train_labels.payload() +
                                 test_labels.payload()) * 4;
    check_memory(bytes, "The IDX dataset in " + folder);

    Dataset data;
    data.name = name;
    data.classes = kIdxClasses;
    data.outputs = kIdxClasses;
    data.features = static_cast<int>(features);
    data.shape = {1, rows, cols};  // one grey channel
    try {
        for (const auto& [images, labels, split] : {std::tuple{&train_images, &train_labels, &data.train},
                                                    std::tuple{&test_images, &test_labels, &data.test}}) {
            IdxImages pixels = read_images(*images);
            split->rows = pixels.count;
            split->x = std::move(pixels.pixels);
            split->y = read_labels(*labels, kIdxClasses);
        }
    } catch (const std::bad_alloc&) {
        throw Error("Not enough memory to read the IDX dataset in " + folder + " (about " + memory_text(bytes) +
                    " as 32-bit values); free some memory or use a smaller dataset.");
    }
    return data;
}

}  // namespace mantissa::data
