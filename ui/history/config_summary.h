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

// "fp16 · dynamic · master fp32 · fc1,fc2 acc fp16 · fc3=fp32": autocast ("fp32" when off),
// loss-scaling mode ("static 1024" with its scale), master weights ("master fp32" or "no master"),
// then, in the model's layer order, each layer whose setting is not what autocast alone gives
// (docs/experiment.md, "precision.layers"): "fc3=fp32" when its three matmuls share a format,
// else the matmuls that differ ("fc1 fwd fp8-e4m3, dgrad fp8-e4m3"), and its accumulation when
// not FP32 ("fc1 acc fp16", "fc1=fp16, acc fp16"); layers that differ alike share one part
// ("fc1,fc2 acc fp16"). An entry that only names autocast's own format says nothing and is left
// out; an entry this version cannot read is shown as its JSON ("fc5={...}"). Last, an op class
// not on auto ("softmax fp16"). Empty when config_json does not parse.
std::string configSummary(const std::string& configJson);

// The model's layer names in order ("fc1".."fcN", as the session names them), from the config;
// empty when it does not parse.
std::vector<std::string> layerNamesFromConfig(const std::string& configJson);

// Every leaf of the JSON object as "dotted.key" -> its value as JSON text ("0.001", "\"fp16\"",
// "[256,128]": arrays are leaves; empty objects add no key). Each precision.layers entry is one
// leaf whatever its form, written as the experiment's own text for it ("\"fp16\"", "\"fp16,
// accumulate fp16\"", "\"forward fp8-e4m3, dgrad fp8-e4m3, wgrad bf16\"": layer_setting_text),
// so the same setting written as a name or as an object compares equal. Empty when config_json
// does not parse.
std::map<std::string, std::string> flattenConfig(const std::string& configJson);

// The keys whose values are not the same in every one of `configs` (a key missing from some
// counts as different), in the order a comparison shows them (compareKeyLess).
std::vector<std::string> differingKeys(const std::vector<std::map<std::string, std::string>>& configs);

// The order of keys in a comparison: what decides the numbers first (precision.*, then model.*,
// train.*, dataset.*, backend.*), then any other key (name), and the lesson's texts last;
// alphabetical within each group.
bool compareKeyLess(const std::string& a, const std::string& b);

}  // namespace mantissa::ui
