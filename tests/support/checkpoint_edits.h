// Test-only edits of safetensors checkpoints, shared by the suites that damage one on purpose
// (tests/engine/train/test_checkpoint.cpp, tests/app/test_cli_resume.cpp) or need a file that is a
// checkpoint to refuse (the GUI's export and save tests): a byte flipped inside a tensor, the
// metadata rewritten with the tensors as they are, a small checkpoint-like file; and, for the
// outputs written through a symbolic link, a link to an older file.
#pragma once

#include <QtTest>

#include <cstdint>
#include <fstream>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "weights/checkpoint_info.h"
#include "weights/safetensors.h"

namespace mantissa::test {

// Flips the lowest bit of the byte in the middle of `tensor`'s data in the safetensors file at
// `path`: damage that leaves the header, and even the value's sign and exponent, as they were.
inline void flip_a_byte(const std::string& path, const std::string& tensor) {
    std::uint64_t offset = 0;
    {
        const SafetensorsFile f(path);
        const SafetensorsEntry* e = f.find(tensor);
        QVERIFY2(e, tensor.c_str());
        offset = e->begin + e->bytes() / 2;
    }
    std::fstream io(path, std::ios::in | std::ios::out | std::ios::binary);
    unsigned char length[8];
    io.read(reinterpret_cast<char*>(length), 8);
    std::uint64_t header = 0;
    for (int i = 8; i-- > 0;) header = (header << 8) | length[i];
    const auto at = static_cast<std::streamoff>(8 + header + offset);
    io.seekg(at);
    char byte = 0;
    io.get(byte);
    io.seekp(at);
    io.put(static_cast<char>(byte ^ 1));
    QVERIFY(io.good());
}

// Writes to `to` the checkpoint at `from` with its metadata JSON edited as `edit` says and its
// tensors as they are (`from` and `to` may be the same file).
inline void rewrite_checkpoint_metadata(const std::string& from, const std::string& to,
                                        const std::function<void(nlohmann::json&)>& edit) {
    std::vector<SafetensorsTensor> tensors;
    std::map<std::string, std::string> meta;
    {
        const SafetensorsFile f(from);
        for (const SafetensorsEntry& e : f.entries()) tensors.push_back({e.name, e.dtype, e.shape, f.read_bytes(e)});
        meta = f.metadata();
    }
    nlohmann::json j = nlohmann::json::parse(meta.at(checkpoint_metadata_key));
    edit(j);
    meta[checkpoint_metadata_key] = j.dump();
    write_safetensors(to, std::move(tensors), meta);
}
inline void rewrite_checkpoint_metadata(const std::string& path, const std::function<void(nlohmann::json&)>& edit) {
    rewrite_checkpoint_metadata(path, path, edit);
}

// A two-value file that any reader takes for a Mantissa checkpoint by its metadata: what an output
// must never replace.
inline void write_checkpoint_like_file(const std::string& path) {
    const std::vector<float> values = {1.0f, 2.0f};
    write_safetensors(path, {safetensors_tensor("fc1.weight", Dtype::F32, {2}, values)},
                      {{checkpoint_metadata_key, checkpoint_info_text(CheckpointInfo{})}});
}

// Writes `contents` to `real` and makes `link` a symbolic link to it (both replaced if there):
// the target an output written through a link must replace, keeping the link.
inline bool link_to_older_file(const QString& real, const QString& link, const QByteArray& contents) {
    QFile::remove(real);
    QFile::remove(link);
    QFile old(real);
    if (!old.open(QIODevice::WriteOnly) || old.write(contents) != contents.size()) return false;
    old.close();
    return QFile::link(real, link);
}

}  // namespace mantissa::test
