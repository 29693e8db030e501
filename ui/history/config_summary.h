// What a run's configuration says, for the run browser and the comparison: a one-line summary of
// its precision recipe, the layer names its model has, and the experiment flattened to dotted keys
// so two runs' configurations can be compared key by key.
//
// Plain C++ over the config_json a run was recorded with (experiment_to_json's output). A config
// that does not parse gives an empty summary or map, never an exception: a browser must list a
// run whatever its text holds.
#pragma once

#include <map>
#include <string>
#include <vector>

namespace mantissa::ui {

// "fp16 · dynamic · master fp32 · fc3=fp32": autocast ("fp32" when off), loss-scaling mode
// ("static 1024" with its scale), master weights ("master fp32" or "no master"), then every
// layer not on auto. Empty when config_json does not parse.
std::string configSummary(const std::string& configJson);

// The model's layer names in order ("fc1".."fcN", as the session names them), from the config;
// empty when it does not parse.
std::vector<std::string> layerNamesFromConfig(const std::string& configJson);

// Every leaf of the JSON object as "dotted.key" -> its value as JSON text ("0.001", "\"fp16\"",
// "[256,128]": arrays are leaves; empty objects add no key). Empty when config_json does not parse.
std::map<std::string, std::string> flattenConfig(const std::string& configJson);

// The keys whose values are not the same in every one of `configs` (a key missing from some
// counts as different), sorted.
std::vector<std::string> differingKeys(const std::vector<std::map<std::string, std::string>>& configs);

}  // namespace mantissa::ui
