// Small helpers shared by the store's files: timestamps, run ids, and the names stored as text.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "store/run_store.h"

namespace mantissa::store {

// Now, as ISO 8601 in UTC with milliseconds: "2025-11-29T17:35:02.125Z".
std::string iso8601_now();

// A random (version 4) UUID, lower-case hex with dashes.
std::string new_uuid();

std::optional<RunStatus> parse_run_status(std::string_view name);
std::optional<EventKind> parse_event_kind(std::string_view name);

// "a, b,,a " -> "a,b": trimmed, empty entries and repeats dropped, order kept.
std::string normalize_tags(std::string_view tags);

// A string as a JSON string literal (quotes included); invalid UTF-8 is replaced, never thrown.
std::string json_quote(std::string_view s);

// The shortest text that reads back as the same double ("0.1", "1e-05"); "inf", "-inf", "nan".
std::string format_double(double v);

// Lower-cases a sentence's first letter, to continue it after a colon.
std::string continue_sentence(std::string s);

}  // namespace mantissa::store
