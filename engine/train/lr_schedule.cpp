// learning_rate_at: the formulas in the header.
#include "train/lr_schedule.h"

#include <algorithm>
#include <cmath>
#include <numbers>

namespace mantissa {

double learning_rate_at(LrSchedule schedule, double base_lr, std::int64_t step,
                        std::int64_t warmup_steps, std::int64_t total_steps) {
    if (warmup_steps > 0 && step < warmup_steps)
        return base_lr * static_cast<double>(step) / static_cast<double>(warmup_steps);
    if (schedule == LrSchedule::constant) return base_lr;
    const double span = static_cast<double>(std::max<std::int64_t>(1, total_steps - warmup_steps));
    const double progress = std::clamp(static_cast<double>(step - warmup_steps) / span, 0.0, 1.0);
    return base_lr * 0.5 * (1.0 + std::cos(std::numbers::pi * progress));
}

}  // namespace mantissa
