// Shared by the fuzz targets (docs/fuzzing.md): the readers under test take file paths, so each
// input is written to a file in a folder of this process's own (made once, under $TMPDIR or /tmp,
// removed at exit), and the checks every target makes on what a reader says.
#pragma once

#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>

namespace fuzz {

// This process's scratch folder, created on first use and removed when the process exits (the
// removal is registered after the path's own static is built, so it runs before that is destroyed).
inline const std::string& scratch() {
    static const std::string dir = [] {
        // $TMPDIR when set; else /dev/shm, a RAM file system where there is one, so that writing
        // an input per run costs no disk I/O; else /tmp.
        const char* tmp = std::getenv("TMPDIR");
        std::string base = tmp && *tmp ? tmp : ::access("/dev/shm", W_OK | X_OK) == 0 ? "/dev/shm" : "/tmp";
        std::string pattern = base + "/mantissa-fuzz-XXXXXX";
        if (!::mkdtemp(pattern.data())) std::abort();
        return pattern;
    }();
    static const bool cleanup = std::atexit([] {
        std::error_code ec;
        std::filesystem::remove_all(scratch(), ec);
    }) == 0;
    (void)cleanup;
    return dir;
}

// Writes `n` bytes at `data` to scratch()/name, replacing what was there; returns the path. The old
// file is removed rather than truncated: on ext4, rewriting a truncated file makes close() wait for
// its blocks to reach the disk, which would make each run wait on I/O.
inline std::string write_input(const std::string& name, const std::uint8_t* data, std::size_t n) {
    const std::string path = scratch() + "/" + name;
    ::unlink(path.c_str());
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(n));
    out.close();
    if (!out) std::abort();
    return path;
}

// Stops the run with a message: libFuzzer reports the input as a crash.
[[noreturn]] inline void fail(const char* what, std::string_view detail = {}) {
    std::fprintf(stderr, "fuzz check failed: %s\n%.*s\n", what, static_cast<int>(detail.size()), detail.data());
    std::abort();
}

// A sentence for a person: not empty, well-formed UTF-8, no control characters (so it is one line
// and never cut short at a NUL), as printable_text.h makes quoted bytes.
inline void check_sentence(std::string_view s) {
    if (s.empty()) fail("an empty sentence");
    for (std::size_t i = 0; i < s.size();) {
        const auto b = static_cast<unsigned char>(s[i]);
        if (b < 0x20 || b == 0x7F) fail("a control character in a sentence", s);
        const std::size_t n = b < 0x80 ? 1 : b < 0xC2 ? 0 : b < 0xE0 ? 2 : b < 0xF0 ? 3 : b < 0xF5 ? 4 : 0;
        if (n == 0 || i + n > s.size()) fail("a sentence that is not UTF-8", s);
        for (std::size_t k = 1; k < n; ++k)
            if ((static_cast<unsigned char>(s[i + k]) & 0xC0) != 0x80) fail("a sentence that is not UTF-8", s);
        i += n;
    }
}

}  // namespace fuzz
