// The CIFAR-10 reader (see cifar_reader.h). A batch file has no header, so its size is all there is
// to check before reading: it must be a positive whole number of 3073-byte records, and that
// number is the file's record count. A folder opens all six files and checks each size, then the
// memory the whole set will take (32-bit pixels and labels) against what this process may use, and
// only then allocates and reads, in chunks of whole records (about 1 MiB), checking each label as
// it arrives. The size fstat stated when the file was opened is what is read: a file that shrinks
// or grows meanwhile is an error, not a different dataset.
#include "data/cifar_reader.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <memory>
#include <new>

#include "data/dataset_folder.h"
#include "data/memory_budget.h"
#include "error.h"
#include "huge_pages.h"
#include "user_file.h"

namespace mantissa::data {
namespace {

namespace fs = std::filesystem;

constexpr std::int64_t kChunkRecords = 341;  // 341 x 3073 bytes: just under 1 MiB read at a time

// One batch file, opened and its size checked; its data not yet read.
class CifarFile {
public:
    explicit CifarFile(const std::string& path)
        : m_path(path), m_file(open_user_file(path, "The CIFAR-10 file " + path)) {
        m_size = user_file_size(m_file);
        if (m_size == 0)
            throw Error("The CIFAR-10 file " + m_path + " is empty; a batch file holds records of " +
                        std::to_string(kCifarRecordBytes) + " bytes (1 label byte, then 3072 pixel bytes).");
        const auto record = static_cast<std::uint64_t>(kCifarRecordBytes);
        if (m_size % record != 0) {
            const std::uint64_t whole = m_size / record, rest = m_size % record;
            throw Error("The CIFAR-10 file " + m_path + " is " + std::to_string(m_size) +
                        " bytes, not a whole number of " + std::to_string(record) +
                        "-byte records (1 label byte, then 3072 pixel bytes): " + std::to_string(whole) +
                        (whole == 1 ? " record and " : " records and ") + std::to_string(rest) +
                        (rest == 1 ? " byte" : " bytes") +
                        " more; it is cut short, or not a file of the CIFAR-10 binary version.");
        }
        m_records = static_cast<std::int64_t>(m_size / record);
    }

    const std::string& path() const { return m_path; }
    std::int64_t records() const { return m_records; }

    // Reads every record: pixels (records(), 3072) as byte / 255, labels (records()). Both must
    // have room for records() rows.
    void read_into(float* pixels, std::int32_t* labels) {
        const auto chunk_bytes = static_cast<std::size_t>(kChunkRecords * kCifarRecordBytes);
        const auto chunk = std::make_unique_for_overwrite<std::uint8_t[]>(chunk_bytes);
        for (std::int64_t first = 0; first < m_records; first += kChunkRecords) {
            const std::int64_t n = std::min(kChunkRecords, m_records - first);
            const auto want = static_cast<std::size_t>(n * kCifarRecordBytes);
            const std::size_t got = read(chunk.get(), want);
            if (got < want)
                throw Error("The CIFAR-10 file " + m_path + " is truncated: it was " + std::to_string(m_size) +
                            " bytes when it was opened, but it ends after " +
                            std::to_string(static_cast<std::uint64_t>(first * kCifarRecordBytes) + got) +
                            " bytes (it changed while it was read).");
            for (std::int64_t r = 0; r < n; ++r) {
                const std::uint8_t* rec = chunk.get() + r * kCifarRecordBytes;
                const std::int64_t row = first + r;
                if (rec[0] >= kCifarClasses)
                    throw Error("The CIFAR-10 file " + m_path + " holds label " + std::to_string(rec[0]) +
                                " in record " + std::to_string(row) + " (counting from 0, at byte " +
                                std::to_string(row * kCifarRecordBytes) + "), out of range: labels must be 0..9.");
                labels[row] = rec[0];
                // byte / 255 in fp32, as the IDX reader (and torchvision's ToTensor) computes it.
                float* dst = pixels + row * kCifarImageBytes;
                for (std::int64_t k = 0; k < kCifarImageBytes; ++k) dst[k] = static_cast<float>(rec[1 + k]) / 255.0f;
            }
        }
        std::uint8_t extra = 0;
        if (read(&extra, 1) != 0)
            throw Error("The CIFAR-10 file " + m_path + " grew while it was read (it was " + std::to_string(m_size) +
                        " bytes when it was opened); read it again once it is complete.");
    }

private:
    std::size_t read(std::uint8_t* dst, std::size_t n) {
        std::size_t got = 0;
        while (got < n) {
            const ssize_t r = ::read(m_file.fd(), dst + got, std::min<std::size_t>(n - got, std::size_t{1} << 30));
            if (r < 0 && errno == EINTR) continue;
            if (r < 0) {
                const int err = errno;
                throw Error("The CIFAR-10 file " + m_path + " cannot be read: " + std::strerror(err) + ".");
            }
            if (r == 0) break;
            got += static_cast<std::size_t>(r);
        }
        return got;
    }

    std::string m_path;
    UserFile m_file;
    std::uint64_t m_size = 0;  // bytes, as fstat stated it when the file was opened
    std::int64_t m_records = 0;
};

// Bytes the data of `records` records takes once read: 32-bit pixels and a 32-bit label each.
std::uint64_t memory_for(std::int64_t records) {
    return static_cast<std::uint64_t>(records) *
           (static_cast<std::uint64_t>(kCifarImageBytes) * sizeof(float) + sizeof(std::int32_t));
}

// Resizes `split` for `records` rows and reads `files` into it, in order.
void read_split(std::vector<CifarFile*> files, Split& split) {
    std::int64_t records = 0;
    for (const CifarFile* f : files) records += f->records();
    split.rows = records;
    reserve_in_huge_pages(split.x, static_cast<std::size_t>(records * kCifarImageBytes));
    split.x.resize(static_cast<std::size_t>(records * kCifarImageBytes));
    split.y.resize(static_cast<std::size_t>(records));
    std::int64_t row = 0;
    for (CifarFile* f : files) {
        f->read_into(split.x.data() + row * kCifarImageBytes, split.y.data() + row);
        row += f->records();
    }
}

bool is_folder(const fs::path& path) {
    struct stat st {};
    return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

bool is_there(const fs::path& path) {
    struct stat st {};
    return ::lstat(path.c_str(), &st) == 0;
}

// What a folder that lacks the files may hold instead, as a hint for the message ("" when nothing).
std::string folder_hint(const std::string& folder) {
    if (is_folder(fs::path(folder) / "cifar-10-batches-bin"))
        return "; it holds a folder cifar-10-batches-bin: set dataset.path to that folder";
    if (is_there(fs::path(folder) / "data_batch_1") || is_there(fs::path(folder) / "cifar-10-batches-py"))
        return "; it seems to hold the Python version (data_batch_1 without .bin), which Mantissa does not read";
    return {};
}

}  // namespace

CifarBatch read_cifar_batch(const std::string& path) {
    CifarFile file(path);
    const std::uint64_t bytes = memory_for(file.records());
    check_memory(bytes, "The CIFAR-10 file " + path);
    CifarBatch batch;
    try {
        batch.count = file.records();
        reserve_in_huge_pages(batch.pixels, static_cast<std::size_t>(file.records() * kCifarImageBytes));
        batch.pixels.resize(static_cast<std::size_t>(file.records() * kCifarImageBytes));
        batch.labels.resize(static_cast<std::size_t>(file.records()));
    } catch (const std::bad_alloc&) {
        throw Error("Not enough memory to read the CIFAR-10 file " + path + " (about " + memory_text(bytes) +
                    " as 32-bit values); free some memory or use a smaller dataset.");
    }
    file.read_into(batch.pixels.data(), batch.labels.data());
    return batch;
}

std::vector<std::string> missing_cifar_files(const std::string& folder) {
    std::vector<std::string> missing;
    for (const char* name : kCifarFiles) {
        const std::string path = (fs::path(folder) / name).string();
        if (!user_file_exists(path, "The CIFAR-10 file " + path)) missing.emplace_back(name);
    }
    return missing;
}

Dataset read_cifar_folder(const std::string& folder) {
    const std::string files = std::string(kCifarFiles[0]) + " to " + kCifarFiles[4] + " and " + kCifarFiles[5];
    if (!dataset_folder_exists(folder, "cifar10", "the six files of the CIFAR-10 binary version (" + files + ")"))
        throw Error("The CIFAR-10 folder " + folder + " does not exist (dataset.path); download " + kCifarSource +
                    ", unpack it, and set dataset.path to the folder cifar-10-batches-bin it holds.");
    const std::vector<std::string> missing = missing_cifar_files(folder);
    if (!missing.empty())
        throw Error("The CIFAR-10 folder " + folder + " lacks " + missing.front() + folder_hint(folder) +
                    "; it needs " + files + ", the files of " + kCifarSource + ".");

    // Every size first: the six files and the memory they need, before any data.
    std::vector<std::unique_ptr<CifarFile>> opened;
    for (const char* name : kCifarFiles)
        opened.push_back(std::make_unique<CifarFile>((fs::path(folder) / name).string()));
    std::int64_t records = 0;
    for (const auto& f : opened) records += f->records();
    const std::uint64_t bytes = memory_for(records);
    check_memory(bytes, "The CIFAR-10 dataset in " + folder);

    Dataset data;
    data.name = "cifar10";
    data.features = static_cast<int>(kCifarImageBytes);
    data.shape = kCifarShape;
    data.classes = kCifarClasses;
    data.outputs = kCifarClasses;
    try {
        std::vector<CifarFile*> train;
        for (std::size_t i = 0; i + 1 < opened.size(); ++i) train.push_back(opened[i].get());
        read_split(std::move(train), data.train);
        read_split({opened.back().get()}, data.test);
    } catch (const std::bad_alloc&) {
        throw Error("Not enough memory to read the CIFAR-10 dataset in " + folder + " (about " + memory_text(bytes) +
                    " as 32-bit values); free some memory or use a smaller dataset.");
    }
    return data;
}

}  // namespace mantissa::data
