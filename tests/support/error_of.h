// error_of: the message of the mantissa::Error a callable throws, empty when it throws none, so a
// test can check what a refusal says.
#pragma once

#include <QString>

#include "error.h"

namespace test_support {

template <class F>
QString error_of(F&& f) {
    try {
        f();
    } catch (const mantissa::Error& e) {
        return QString::fromUtf8(e.what());
    }
    return {};
}

}  // namespace test_support
