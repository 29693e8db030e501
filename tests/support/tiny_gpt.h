// The smallest GPT the language-model suites train: one block of width 16 with two heads over
// windows of 16 characters of a text file, small enough for a few steps a second on a busy
// machine. Suites set what they test on top (batch, steps, precision, evaluation).
#pragma once

#include <string>

#include "config/experiment.h"

namespace mantissa::test {

inline Experiment tiny_gpt_experiment(const std::string& text_path) {
    Experiment e;
    e.name = "tiny-gpt";
    e.backend = "cpu";
    e.dataset.kind = "text";
    e.dataset.path = text_path;
    e.dataset.context = 16;
    e.model.kind = "gpt";
    e.model.depth = 1;
    e.model.heads = 2;
    e.model.dim = 16;
    e.model.context = 16;
    e.model.mlp_ratio = 2;
    e.precision.autocast = Autocast::off;
    e.precision.loss_scaling.mode = LossScalingMode::off;
    return e;
}

}  // namespace mantissa::test
