// The Pareto front of a sweep's runs over two figures (the recipe table's mark in the CLI and the
// GUI's scatter): a run is on the front when no other run is at least as good in both and better
// in one. One definition for every place that marks it.
#pragma once

#include <vector>

namespace mantissa {

struct ParetoPoint {
    double x = 0, y = 0;  // NaN: the run lacks a figure and is on no front
};

// Which points are on the front, each figure better when higher (`*_higher_better`) or lower.
std::vector<bool> pareto_front(const std::vector<ParetoPoint>& points, bool x_higher_better, bool y_higher_better);

}  // namespace mantissa
