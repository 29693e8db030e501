// mantissa::Error: the one exception type the engine throws. Its message is a full sentence for a
// person (what failed, and where: file, key, offset, API call), so the edges (CLI, GUI) can show
// it as it is.
#pragma once

#include <stdexcept>
#include <string>

namespace mantissa {

class Error : public std::runtime_error {
public:
    explicit Error(const std::string& message) : std::runtime_error(message) {}
};

}  // namespace mantissa
