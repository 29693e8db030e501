// Numbers in Mantissa's JSON (json_number.h).
#include "config/json_number.h"

#include <cmath>
#include <string>

namespace mantissa {

nlohmann::json json_number(double v) {
    if (std::isnan(v)) return "nan";
    if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
    return v;
}

std::optional<double> number_from_json(const nlohmann::json& v) {
    if (v.is_number()) return v.get<double>();
    if (v.is_string()) {
        const std::string s = v.get<std::string>();
        if (s == "inf") return HUGE_VAL;
        if (s == "-inf") return -HUGE_VAL;
        if (s == "nan") return std::nan("");
    }
    return std::nullopt;
}

}  // namespace mantissa
