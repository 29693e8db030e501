// Numbers in the JSON Mantissa writes (event data, checkpoint metadata): JSON has no inf or NaN, so
// those are written as the strings "inf", "-inf" and "nan". One spelling, written and read here.
#pragma once

#include <optional>

#include <nlohmann/json.hpp>

namespace mantissa {

nlohmann::json json_number(double v);
// A number, or one of those three strings; empty for anything else.
std::optional<double> number_from_json(const nlohmann::json& v);

}  // namespace mantissa
