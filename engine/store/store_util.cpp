// Helpers of store_util.h.
#include "store/store_util.h"

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <random>
#include <vector>

#include <nlohmann/json.hpp>

namespace mantissa::store {

std::string iso8601_now() {
    using namespace std::chrono;
    const auto now = system_clock::now();
    const auto ms = duration_cast<milliseconds>(now.time_since_epoch()).count() % 1000;
    const std::time_t t = system_clock::to_time_t(now);
    std::tm tm{};
    gmtime_r(&t, &tm);
    char buf[96];
    std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
                  tm.tm_hour, tm.tm_min, tm.tm_sec, static_cast<int>(ms));
    return buf;
}

std::string new_uuid() {
    static thread_local std::mt19937_64 rng{[] {
        std::random_device rd;
        std::seed_seq seq{rd(), rd(), rd(), rd(),
                          static_cast<unsigned>(std::chrono::steady_clock::now().time_since_epoch().count())};
        return std::mt19937_64(seq);
    }()};
    std::uint64_t hi = rng(), lo = rng();
    hi = (hi & ~0xF000ull) | 0x4000ull;                            // version 4
    lo = (lo & ~(0xC000000000000000ull)) | 0x8000000000000000ull;  // variant 10
    char buf[40];
    std::snprintf(buf, sizeof buf, "%08x-%04x-%04x-%04x-%012llx", static_cast<unsigned>(hi >> 32),
                  static_cast<unsigned>((hi >> 16) & 0xFFFF), static_cast<unsigned>(hi & 0xFFFF),
                  static_cast<unsigned>(lo >> 48), static_cast<unsigned long long>(lo & 0xFFFFFFFFFFFFull));
    return buf;
}

std::optional<RunStatus> parse_run_status(std::string_view name) {
    for (RunStatus s :
         {RunStatus::running, RunStatus::completed, RunStatus::stopped, RunStatus::failed, RunStatus::interrupted})
        if (name == run_status_name(s)) return s;
    return std::nullopt;
}

std::optional<EventKind> parse_event_kind(std::string_view name) {
    for (int k = 0; k <= static_cast<int>(EventKind::notice); ++k)
        if (name == event_kind_name(static_cast<EventKind>(k))) return static_cast<EventKind>(k);
    return std::nullopt;
}

std::string normalize_tags(std::string_view tags) {
    std::vector<std::string> seen;
    std::string out;
    std::size_t start = 0;
    while (start <= tags.size()) {
        std::size_t end = tags.find(',', start);
        if (end == std::string_view::npos) end = tags.size();
        std::string_view t = tags.substr(start, end - start);
        while (!t.empty() && (t.front() == ' ' || t.front() == '\t')) t.remove_prefix(1);
        while (!t.empty() && (t.back() == ' ' || t.back() == '\t')) t.remove_suffix(1);
        if (!t.empty() && std::find(seen.begin(), seen.end(), t) == seen.end()) {
            seen.emplace_back(t);
            if (!out.empty()) out += ',';
            out += t;
        }
        start = end + 1;
    }
    return out;
}

std::string json_quote(std::string_view s) {
    return nlohmann::json(std::string(s)).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string format_double(double v) {
    if (std::isnan(v)) return "nan";
    if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
    char buf[64];
    auto r = std::to_chars(buf, buf + sizeof buf, v);
    return std::string(buf, r.ptr);
}

std::string continue_sentence(std::string s) {
    if (s.size() > 1 && s[0] >= 'A' && s[0] <= 'Z' && !(s[1] >= 'A' && s[1] <= 'Z'))
        s[0] = static_cast<char>(s[0] - 'A' + 'a');
    if (!s.empty() && s.back() == '.') s.pop_back();
    return s;
}

}  // namespace mantissa::store
