// Argument scanning and the command registry of mantissa-cli.
#include "cli/cli_common.h"

#include <algorithm>
#include <cstdlib>
#include <unistd.h>

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
    for (const auto& g : m_given)
        if (g.first == name) v = g.second;
    return v;
}

std::vector<std::string> Args::values(std::string_view name) const {
    std::vector<std::string> v;
    for (const auto& g : m_given)
        if (g.first == name) v.push_back(g.second);
    return v;
}

std::optional<long long> Args::integer(std::string_view name) const {
    auto v = value(name);
    if (!v) return std::nullopt;
    char* end = nullptr;
    errno = 0;
    long long n = std::strtoll(v->c_str(), &end, 10);
    if (v->empty() || *end != '\0' || errno != 0)
        throw UsageError{"--" + std::string(name) + " needs a whole number, not '" + *v + "'"};
    return n;
}

bool stdout_is_terminal() { return isatty(STDOUT_FILENO) == 1; }

}  // namespace mantissa::cli
