// dataset_folder_exists (see dataset_folder.h).
#include "data/dataset_folder.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>

#include "error.h"

namespace mantissa::data {
namespace {

// The kind of thing `mode` says is there, for a path that is not a folder.
const char* not_a_folder(mode_t mode) {
    if (S_ISREG(mode)) return "a file";
    if (S_ISFIFO(mode)) return "a FIFO (a named pipe)";
    if (S_ISCHR(mode) || S_ISBLK(mode)) return "a device";
    if (S_ISSOCK(mode)) return "a socket";
    return "not a folder";
}

}  // namespace

bool dataset_folder_exists(const std::string& folder, const std::string& kind, const std::string& holding) {
    struct stat st {};
    if (::stat(folder.c_str(), &st) != 0) {
        const int err = errno;
        if (err == ENOENT || err == ENOTDIR) return false;
        if (err == ELOOP)
            throw Error("dataset.path " + folder +
                        " is a symbolic link that loops (too many levels of symbolic links).");
        throw Error("dataset.path " + folder + " cannot be read: " + std::strerror(err) + ".");
    }
    if (!S_ISDIR(st.st_mode))
        throw Error("dataset.path " + folder + " is " + not_a_folder(st.st_mode) + ", not a folder; kind '" + kind +
                    "' reads a folder holding " + holding + ".");
    return true;
}

}  // namespace mantissa::data
