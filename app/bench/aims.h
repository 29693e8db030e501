// How the suites print an aim, one spelling everywhere: "aim: WHAT: FIGURE [met]" or "[NOT MET]",
// several figures of one aim joined by "; ", or "aim: WHAT: not measured (WHY)" in place of them.
#pragma once

#include <cstdio>
#include <string>

namespace mantissa::bench {

inline const char* verdict(bool met) { return met ? "met" : "NOT MET"; }

// "FIGURE [met]", the figure printed by a printf format: aim_figure("%.2fx", 1.56, false).
inline std::string aim_figure(const char* format, double value, bool met) {
    char buf[64];
    std::snprintf(buf, sizeof buf, format, value);
    return std::string(buf) + " [" + verdict(met) + "]";
}

// Adds one figure to an aim's list.
inline void add_figure(std::string& figures, const std::string& figure) {
    figures += (figures.empty() ? "" : "; ") + figure;
}

inline std::string aim_note(const std::string& what, const std::string& figures) {
    return "aim: " + what + ": " + figures;
}

}  // namespace mantissa::bench
