// The fortunes corpus (see fortunes_corpus.h). The folder is listed with lstat() only, so a FIFO or
// a device among its entries is skipped unopened and the .u8 links are told from the plain files;
// the sizes the listing states are summed against the text file limit before any file is read,
// and each file is then read (open_user_file's checks again) and checked on its own, so a refusal
// names the one file and the offset in it.
#include "data/fortunes_corpus.h"

#include <dirent.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>

#include "error.h"
#include "user_file.h"

namespace mantissa::data {
namespace {

constexpr const char* kInstall = "install fortunes: apt-get install fortunes";

std::string folder_what(const std::string& folder) {
    return "The fortunes folder " + folder;
}

struct Listed {
    std::string name;
    std::uint64_t size = 0;
};

// The fortune files of `folder` with the sizes lstat() states, sorted by name.
std::vector<Listed> list_fortune_files(const std::string& folder) {
    const std::string what = folder_what(folder);
    struct stat st {};
    if (::stat(folder.c_str(), &st) != 0) {
        const int err = errno;
        if (err == ENOENT || err == ENOTDIR)
            throw Error(what + " does not exist; " + kInstall + " (Debian), or name a folder of fortune files.");
        throw Error(what + " cannot be read: " + std::strerror(err) + ".");
    }
    if (!S_ISDIR(st.st_mode)) throw Error(what + " is not a folder; it should hold fortune files (" + kInstall + ").");
    const std::unique_ptr<DIR, int (*)(DIR*)> dir(::opendir(folder.c_str()), ::closedir);
    if (!dir) {
        const int err = errno;
        throw Error(what + " cannot be read: " + std::strerror(err) + ".");
    }
    std::vector<Listed> files;
    for (;;) {
        errno = 0;
        const dirent* entry = ::readdir(dir.get());
        if (!entry) {
            if (errno != 0) {
                const int err = errno;
                throw Error(what + " cannot be read: " + std::strerror(err) + ".");
            }
            break;
        }
        const std::string name = entry->d_name;
        if (name.empty() || name.front() == '.' || name.ends_with(".dat")) continue;
        struct stat file {};
        const std::string path = folder + "/" + name;
        if (::lstat(path.c_str(), &file) != 0 || !S_ISREG(file.st_mode)) continue;
        files.push_back({name, static_cast<std::uint64_t>(file.st_size)});
    }
    if (files.empty())
        throw Error(what + " holds no fortune files (text files of quotes separated by lines holding only %); " +
                    kInstall + ".");
    std::sort(files.begin(), files.end(), [](const Listed& a, const Listed& b) { return a.name < b.name; });
    return files;
}

// Appends the text of one fortune file to `out`: its separator lines as empty lines, a line break
// at its end.
void append_fortunes(std::string& out, std::string_view text) {
    if (text.starts_with("\xEF\xBB\xBF")) text.remove_prefix(3);
    std::size_t start = 0;
    while (start < text.size()) {
        std::size_t end = text.find('\n', start);
        if (end == std::string_view::npos) end = text.size();
        const std::string_view line = text.substr(start, end - start);
        if (line != "%" && line != "%\r") out.append(line);
        out += '\n';
        start = end + 1;
    }
}

}  // namespace

std::vector<std::string> fortune_files(const std::string& folder) {
    std::vector<std::string> names;
    for (Listed& f : list_fortune_files(folder)) names.push_back(std::move(f.name));
    return names;
}

std::string fortunes_text(const std::string& folder) {
    const std::vector<Listed> files = list_fortune_files(folder);
    std::uint64_t total = 0;
    for (const Listed& f : files) total += f.size;
    if (total > kTextFileLimit.bytes)
        throw Error(folder_what(folder) + " holds " + std::to_string(total) + " bytes of fortune files, more than " +
                    kTextFileLimit.text + ".");
    std::string out;
    out.reserve(static_cast<std::size_t>(total) + files.size());
    for (const Listed& f : files) {
        const std::string path = folder + "/" + f.name;
        const std::string what = "The fortune file " + path;
        const std::string text = read_user_file(path, what, kTextFileLimit);
        if (text.empty()) continue;  // adds nothing; not a reason to refuse the folder
        check_text_bytes(text, what);
        append_fortunes(out, text);
        if (out.size() > kTextFileLimit.bytes)
            throw Error(folder_what(folder) + " holds more than " + kTextFileLimit.text +
                        " of fortune files (they grew while they were read).");
    }
    return out;
}

TextCorpus read_fortunes_corpus(const std::string& folder, const TextCorpusOptions& options) {
    const std::string text = fortunes_text(folder);
    return TextCorpus::from_text(text, "The fortunes corpus in " + folder, options);
}

}  // namespace mantissa::data
