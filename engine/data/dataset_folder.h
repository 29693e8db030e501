// Whether dataset.path names a folder, for the kinds that read one (the IDX kinds, cifar10): the
// one place that tells "nothing there" (a missing dataset: a fallback or a sentence on how to get
// it) from "something there that is not a folder" (always an error, named for what it is). Looks
// with stat() only, so a FIFO never blocks. Any thread.
#pragma once

#include <string>

namespace mantissa::data {

// True when `folder` is a folder (a symbolic link to one is fine), false when nothing is there.
// Anything else throws mantissa::Error: "dataset.path F is a FIFO (a named pipe), not a folder;
// kind 'K' reads a folder holding H." (also a file, a device, a socket), a symbolic link that loops,
// or a path that cannot be inspected. `holding` says what the folder should hold ("the four IDX
// files").
bool dataset_folder_exists(const std::string& folder, const std::string& kind, const std::string& holding);

}  // namespace mantissa::data
