// Argument scanning and the command registry of mantissa-cli.
#include "cli/cli_common.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <system_error>
#include <unistd.h>

#include "error.h"
#include "store/run_store.h"

namespace mantissa::cli {

namespace {
std::vector<Command>& registry() {
    static std::vector<Command> r;
    return r;
}
bool contains(const std::vector<std::string>& v, std::string_view s) {
    return std::find(v.begin(), v.end(), s) != v.end();
}
}  // namespace

bool register_command(Command command) {
    registry().push_back(std::move(command));
    std::sort(registry().begin(), registry().end(),
              [](const Command& a, const Command& b) { return a.name < b.name; });
    return true;
}

const std::vector<Command>& commands() { return registry(); }

void Args::parse() {
    bool options_done = false;
    for (std::size_t i = 0; i < m_args.size(); ++i) {
        const std::string& a = m_args[i];
        if (options_done || a.size() < 2 || a[0] != '-' || (a[1] != '-' && a != "-o" && a != "-c")) {
            // A lone "-" or a negative number ("-1.5", "-inf") is a value, not an option.
            m_positional.push_back(a);
            continue;
        }
        if (a == "--") {
            options_done = true;
            continue;
        }
        std::string name = a == "-o" ? "--output" : a == "-c" ? "--config" : a;  // the GUI's short names
        std::string value;
        bool has_inline = false;
        if (auto eq = name.find('='); eq != std::string::npos) {
            value = name.substr(eq + 1);
            name = name.substr(0, eq);
            has_inline = true;
        }
        name = name.substr(2);
        if (contains(m_flags, name)) {
            if (has_inline) throw UsageError{"--" + name + " takes no value"};
            m_given.emplace_back(name, "");
        } else if (contains(m_options, name)) {
            if (!has_inline) {
                if (i + 1 >= m_args.size()) throw UsageError{"--" + name + " needs a value"};
                // The next word is one of this command's options, not a value: the value was left
                // out (a value that looks like an option is written --NAME=VALUE).
                const std::string& next = m_args[i + 1];
                std::string next_name = next == "-o" ? "output" : next == "-c" ? "config" : "";
                if (next.starts_with("--")) next_name = next.substr(2, next.find('=') == std::string::npos
                                                                          ? std::string::npos
                                                                          : next.find('=') - 2);
                if (!next_name.empty() && (contains(m_flags, next_name) || contains(m_options, next_name)))
                    throw UsageError{"--" + name + " needs a value, but " + next + " follows it (write --" + name +
                                     "=VALUE for a value that begins with -)"};
                value = m_args[++i];
            }
            m_given.emplace_back(name, value);
        } else {
            throw UsageError{"unknown option '" + a + "' (see --help)"};
        }
    }
}

bool Args::has(std::string_view name) const {
    return std::any_of(m_given.begin(), m_given.end(), [&](const auto& g) { return g.first == name; });
}

std::optional<std::string> Args::value(std::string_view name) const {
    std::optional<std::string> v;
    for (const auto& g : m_given) {
        if (g.first != name) continue;
        // An option read as one value given twice: neither may silently win (repeatable ones,
        // --set and the like, are read with values()).
        if (v)
            throw UsageError{"--" + std::string(name) + " was given twice ('" + printable_text(*v) + "' and '" +
                             printable_text(g.second) + "'); give it once"};
        v = g.second;
    }
    return v;
}

std::vector<std::string> Args::values(std::string_view name) const {
    std::vector<std::string> v;
    for (const auto& g : m_given)
        if (g.first == name) v.push_back(g.second);
    return v;
}

void Args::expect_words(std::size_t count, std::string_view missing, std::string_view usage) const {
    if (m_positional.size() < count) throw UsageError{std::string(missing) + ": " + std::string(usage)};
    if (m_positional.size() == count) return;
    const std::size_t extra = m_positional.size() - count;
    const std::string first = "'" + printable_text(m_positional[count]) + "'";
    throw UsageError{(extra == 1 ? first + " is one word too many: "
                                 : first + " and the words after it are " + std::to_string(extra) + " words too many: ") +
                     std::string(usage)};
}

void Args::allow_only(std::initializer_list<std::string_view> names, std::string_view action) const {
    for (const auto& [name, value] : m_given)
        if (std::find(names.begin(), names.end(), name) == names.end()) {
            // The options it takes, unless a long list would hide the sentence.
            std::string takes = names.size() > 6 ? "see --help" : names.size() == 0 ? "it takes none" : "it takes";
            if (names.size() <= 6)
                for (std::string_view n : names) takes += (n == *names.begin() ? " --" : ", --") + std::string(n);
            throw UsageError{"--" + name + " is not an option of " + std::string(action) + " (" + takes + ")"};
        }
}

std::optional<long long> Args::integer(std::string_view name) const {
    auto v = value(name);
    if (!v) return std::nullopt;
    const auto n = app::parse_whole_number(*v);
    const std::string digits = v->starts_with('-') || v->starts_with('+') ? v->substr(1) : *v;
    if (!n && !digits.empty() && digits.find_first_not_of("0123456789") == std::string::npos)
        throw UsageError{"--" + std::string(name) + " " + *v + " is out of range (a whole number of at most 18 digits)"};
    if (!n) throw UsageError{"--" + std::string(name) + " needs a whole number like 1000, not '" + *v + "'"};
    return n;
}

std::string count_of(std::int64_t n, const char* one, const char* many) {
    return std::to_string(n) + " " + (n == 1 ? one : many);
}

bool store_file_present(const std::string& db) {
    // No name at all is not "no store yet": opening it says "No run store file was given." (exit 2).
    if (db.empty()) return true;
    std::error_code ec;
    const bool present = std::filesystem::exists(db, ec);
    if (ec) return true;
    if (!present) return false;
    // An empty file is a store still to be created (docs/schema.md): there is none to read yet.
    const bool empty = std::filesystem::is_regular_file(db, ec) && !ec && std::filesystem::file_size(db, ec) == 0 && !ec;
    return !empty;
}

void require_writable_store(const RunStore& store, const std::string& db, std::string_view what,
                            std::string_view advice) {
    if (store.read_only())
        throw Error("The run store " + db + " can only be read (check its permissions), so " + std::string(what) +
                    " cannot be recorded" + (advice.empty() ? "" : "; " + std::string(advice)) + ".");
}

bool stdout_is_terminal() { return isatty(STDOUT_FILENO) == 1; }

void refuse_unsafe_output(const std::string& option, const std::string& target,
                          const std::vector<app::GuardedFile>& guarded) {
    if (target.empty()) throw UsageError{option + " needs a file name"};
    if (auto why = app::refuse_output(option, target, guarded)) throw UsageError{*why};
}

namespace {
std::string reason(int err) {
    return err != 0 ? std::strerror(err) : "the data could not all be written";
}
}  // namespace

std::string write_failed(const std::string& name, int err) {
    return "Writing to " + name + " failed: " + reason(err) + ".";
}

void require_written(std::ostream& out, const std::string& name) {
    const int earlier = errno;  // the failed write's reason when it failed before the flush
    errno = 0;
    out.flush();
    const int err = errno != 0 ? errno : earlier;
    if (!out) throw Error(write_failed(name, err));
}

std::string stdout_write_error() {
    errno = 0;
    std::cout.flush();
    int err = errno;
    const bool cout_failed = !std::cout;
    errno = 0;
    const bool stdio_failed = std::fflush(stdout) != 0 || std::ferror(stdout);
    if (err == 0) err = errno;
    if (!cout_failed && !stdio_failed) return {};
    return write_failed("standard output", err);
}

}  // namespace mantissa::cli
