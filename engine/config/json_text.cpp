// JSON text -> nlohmann::json for experiment files and --set values (see json_text.h).
//
// The DOM is built by a SAX handler of our own on nlohmann's public json_sax interface: a stack of
// the open objects and arrays, each value placed at the end of the open array or under the open
// object's current key (as nlohmann's own DOM parser does). The handler refuses a key already
// present in its object and a key or string holding \u0000, and keeps a parse error as one plain
// sentence instead of throwing; the wording of that sentence is config/json_syntax_errors.cpp's,
// which this file only calls. It refuses an array or object deeper than max_json_depth, too: the
// builder keeps its own stack, but whoever copies or writes the value next recurses per level. Text with a NUL byte, or in UTF-16 or UTF-32, is refused before
// parsing (nlohmann would stop at a NUL as if the text ended there).
#include "config/json_text.h"

#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "printable_text.h"
#include "config/json_syntax_errors.h"

namespace mantissa {

using json = nlohmann::json;

namespace {

// Builds the parsed value into `root` from nlohmann's SAX events. Invariant: open_ holds the
// objects and arrays entered and not yet left, outermost first; each pointer stays valid while its
// container is open, because nothing is added to a container while one of its children is open
// (an array's elements do not move; an object's are nodes of a std::map).
class DomBuilder final : public json::json_sax_t {
public:
    DomBuilder(json& root, std::string_view text) : root_(root), text_(text) {}

    bool null() override { return value(nullptr); }
    bool boolean(bool v) override { return value(v); }
    bool number_integer(number_integer_t v) override { return number(v); }
    bool number_unsigned(number_unsigned_t v) override { return number(v); }
    bool number_float(number_float_t v, const string_t& written) override {
        // 1e-400 reads as 0: refused as written, not reported later as a 0 nobody wrote.
        if (v == 0 && written.find_first_of("123456789") < written.find_first_of("eE")) {
            problem_ = {true, describe_number_too_small(text_, numbers_ + 1, written), false};
            return false;
        }
        return number(v);
    }
    bool string(string_t& v) override {
        if (v.find('\0') != string_t::npos) return refuse_nul();
        return value(std::move(v));
    }
    bool binary(binary_t& v) override { return value(std::move(v)); }  // binary formats only

    bool start_object(std::size_t /*elements, or -1*/) override { return enter(json::object()); }
    bool start_array(std::size_t /*elements, or -1*/) override { return enter(json::array()); }
    bool end_object() override { return leave(); }
    bool end_array() override { return leave(); }

    bool key(string_t& k) override {
        ++keys_;
        if (k.find('\0') != string_t::npos) return refuse_nul();
        Open& object = open_.back();
        if (object.node->contains(k)) {
            std::string dotted;  // the keys of the enclosing objects; arrays add nothing
            for (const Open& outer : open_)
                if (&outer != &object && outer.node->is_object()) dotted += outer.key + ".";
            problem_ = {true, describe_duplicate_key(text_, keys_, dotted + k), false};
            return false;
        }
        object.key = std::move(k);
        return true;
    }

    bool parse_error(std::size_t offset, const std::string& last_token, const json::exception& ex) override {
        // id 406 is out_of_range (a number beyond a double): valid syntax that is refused
        problem_ = {true, describe_parse_error(text_, offset, last_token, ex.id, ex.what()), ex.id != 406};
        return false;  // stop: the interface requires it
    }

    const JsonProblem& problem() const { return problem_; }

private:
    // A \u0000 in a key or a string: valid JSON, but a NUL cuts a name, a key or a path short
    // wherever it becomes a C string, so it is refused where it is written.
    bool refuse_nul() {
        problem_ = {true, describe_nul_in_string(text_), false};
        return false;
    }

    struct Open {
        json* node;       // an object or an array
        std::string key;  // in an object: the key whose value comes next
    };

    // Puts `v` where the next value goes (the root, the end of the open array, or the open
    // object's key) and returns where it now lies.
    json* place(json v) {
        if (open_.empty()) {
            root_ = std::move(v);
            return &root_;
        }
        Open& in = open_.back();
        if (in.node->is_array()) {
            in.node->push_back(std::move(v));
            return &in.node->back();
        }
        json& slot = (*in.node)[in.key];
        slot = std::move(v);
        return &slot;
    }
    bool value(json v) {
        place(std::move(v));
        return true;
    }
    template <typename Number>
    bool number(Number v) {
        ++numbers_;
        return value(v);
    }
    bool enter(json empty) {
        if (open_.size() >= static_cast<std::size_t>(max_json_depth)) return refuse_too_deep(empty.is_array());
        open_.push_back({place(std::move(empty)), {}});
        return true;
    }
    // An array or object one level deeper than max_json_depth, refused before it is placed: the
    // sentence names where it would go, from the keys and indices of the containers open around it.
    bool refuse_too_deep(bool array) {
        std::string path;
        for (const Open& outer : open_) {
            if (outer.node->is_object()) {
                path += (path.empty() ? "" : ".") + outer.key;
            } else {  // its open element is its last; the innermost array's new one comes after them
                const std::size_t n = outer.node->size();
                // Appended piece by piece: "[" + std::to_string(...) trips GCC 12's -Wrestrict.
                path += '[';
                path += std::to_string(&outer == &open_.back() ? n : n - 1);
                path += ']';
            }
        }
        problem_ = {true, describe_too_deep(text_, max_json_depth, path, array), false};
        return false;
    }
    bool leave() {
        open_.pop_back();
        return true;
    }

    json& root_;
    std::string_view text_;
    std::vector<Open> open_;
    JsonProblem problem_;
    // The keys and numbers read so far: where a refused one lies is found again by its count
    // (nlohmann's SAX events carry no position).
    std::size_t keys_ = 0;
    std::size_t numbers_ = 0;
};

}  // namespace

bool json_too_deep(std::string_view text) { return too_deep_offset(text, max_json_depth) != std::string_view::npos; }

JsonProblem parse_json(const std::string& text, json& out) {
    // nlohmann takes a NUL byte for the end of the text: refused first, with UTF-16 and UTF-32.
    if (std::string problem = describe_encoding_problem(text); !problem.empty()) return {true, std::move(problem), true};
    DomBuilder builder(out, text);
    bool ok = false;
    try {
        ok = json::sax_parse(text, &builder, json::input_format_t::json, /*strict=*/true, /*ignore_comments=*/true);
    } catch (const json::exception& err) {
        return {true, err.what(), true};
    }
    if (ok) return {};
    if (builder.problem().found) return builder.problem();
    return {true, "it cannot be parsed", true};
}

}  // namespace mantissa
