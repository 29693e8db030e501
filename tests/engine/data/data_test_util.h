// Shared by the data suites: the sentence a call throws as mantissa::Error (empty when it throws
// nothing), so a test compares the whole message a user would read.
#pragma once

#include <functional>
#include <string>

#include "error.h"

namespace mantissa::test {

inline std::string error_of(const std::function<void()>& f) {
    try {
        f();
    } catch (const Error& e) {
        return e.what();
    }
    return {};
}

}  // namespace mantissa::test
