// The learning rate at each step: constant, or cosine decay to 0 over the run; both with an
// optional linear warmup from 0 (as Hugging Face's get_cosine_schedule_with_warmup):
//   step < warmup:  lr = base · step / warmup
//   constant:       lr = base
//   cosine:         lr = base · ½(1 + cos(π · (step - warmup) / (total - warmup)))
// `step` is the 0-based index of the step about to run.
#pragma once

#include <cstdint>

#include "config/experiment.h"

namespace mantissa {

double learning_rate_at(LrSchedule schedule, double base_lr, std::int64_t step,
                        std::int64_t warmup_steps, std::int64_t total_steps);

}  // namespace mantissa
