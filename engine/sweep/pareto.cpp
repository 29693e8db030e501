// The Pareto front (pareto.h): O(n²), for sweeps of at most thousands of runs.
#include "sweep/pareto.h"

#include <cmath>

namespace mantissa {

std::vector<bool> pareto_front(const std::vector<ParetoPoint>& points, bool x_higher_better, bool y_higher_better) {
    const auto better_or_equal = [](double a, double b, bool higher) { return higher ? a >= b : a <= b; };
    const auto better = [](double a, double b, bool higher) { return higher ? a > b : a < b; };
    std::vector<bool> front(points.size(), false);
    for (std::size_t i = 0; i < points.size(); ++i) {
        const ParetoPoint& p = points[i];
        if (std::isnan(p.x) || std::isnan(p.y)) continue;
        bool dominated = false;
        for (std::size_t j = 0; j < points.size() && !dominated; ++j) {
            const ParetoPoint& q = points[j];
            if (j == i || std::isnan(q.x) || std::isnan(q.y)) continue;
            dominated = better_or_equal(q.x, p.x, x_higher_better) && better_or_equal(q.y, p.y, y_higher_better) &&
                        (better(q.x, p.x, x_higher_better) || better(q.y, p.y, y_higher_better));
        }
        front[i] = !dominated;
    }
    return front;
}

}  // namespace mantissa
