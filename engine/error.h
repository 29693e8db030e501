// mantissa::Error: the one exception type the engine throws. Its message is a full sentence for a
// person (what failed, and where: file, key, offset, API call), so the edges (CLI, GUI) can show
// it as it is.
#pragma once

#include <stdexcept>
#include <string>

#include "printable_text.h"

namespace mantissa {

class Error : public std::runtime_error {
public:
    // The message is made printable here, once for every thrower: a sentence often quotes bytes
    // from a user's file (a JSON key, a layer name, a value's dump) that may hold a control
    // character or DEL, and a sentence must stay one line of well-formed UTF-8 wherever it is shown.
    // Text that is already printable passes unchanged, so a quote escaped before stays as it was.
    explicit Error(const std::string& message) : std::runtime_error(printable_text(message)) {}
};

}  // namespace mantissa
