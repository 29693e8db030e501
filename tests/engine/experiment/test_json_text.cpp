// The JSON text parser behind experiment files and --set (config/json_text): valid documents give
// exactly what json::parse gives (the same integer, unsigned and float kinds), a key twice in one
// object is refused with its dotted path at any depth, and each kind of syntax error reads as one
// plain sentence with its line and column. The slots are defined outside the class because moc
// misreads the raw string literals (R"(...)") that hold the documents.
#include <QtTest>

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "config/json_text.h"

using namespace mantissa;
using json = nlohmann::json;

namespace {

// True when a and b have the same value and the same kind at every place: json's operator== holds
// 1 (integer), 1u (unsigned) and 1.0 (float) equal, which must not pass here.
bool same_kinds(const json& a, const json& b) {
    if (a.type() != b.type() || a.size() != b.size()) return false;
    if (a.is_object()) {
        for (auto ia = a.begin(), ib = b.begin(); ia != a.end(); ++ia, ++ib)
            if (ia.key() != ib.key() || !same_kinds(*ia, *ib)) return false;
        return true;
    }
    if (a.is_array()) {
        for (std::size_t i = 0; i < a.size(); ++i)
            if (!same_kinds(a[i], b[i])) return false;
        return true;
    }
    return a == b;
}

// [{"a":[{"a":[ ... 0 ... ]}]}]: arrays of objects, `depth` of each.
std::string nested_arrays_of_objects(int depth) {
    std::string text;
    for (int i = 0; i < depth; ++i) text += R"([{"a":)";
    text += "0";
    for (int i = 0; i < depth; ++i) text += "}]";
    return text;
}

// [[[ ... ]]]: `depth` arrays, one in another.
std::string nested_arrays(int depth) {
    return std::string(static_cast<std::size_t>(depth), '[') + std::string(static_cast<std::size_t>(depth), ']');
}

}  // namespace

class TestJsonText : public QObject {
    Q_OBJECT

private slots:
    void validDocuments_data();
    void validDocuments();
    void numberKinds_data();
    void numberKinds();
    void duplicateKeys_data();
    void duplicateKeys();
    void errors_data();
    void errors();
    void tooDeep_data();
    void tooDeep();
    void everyMistakeHasAPlace();
    void independentCalls();
};

void TestJsonText::validDocuments_data() {
    QTest::addColumn<QString>("text");
    const auto row = [](const char* name, const std::string& text) {
        QTest::newRow(name) << QString::fromStdString(text);
    };
    row("empty object", "{}");
    row("empty array", "[]");
    row("top-level number", "42");
    row("top-level string", R"("fp8")");
    row("top-level true", "true");
    row("top-level null", " null ");
    row("nested objects", R"({"train": {"lr": 0.01, "seed": 7}, "model": {"hidden": [512, 256]}})");
    row("arrays of objects", R"([{"a": 1}, {"b": [{"c": null}, {"d": false}]}, []])");
    row("deep arrays of objects, to the depth limit", nested_arrays_of_objects(max_json_depth / 2));
    row("deep arrays, to the depth limit", nested_arrays(max_json_depth));
    row("same key in two objects", R"({"train": {"lr": 0.1}, "layers": {"lr": 1}, "x": [{"lr": 2}, {"lr": 3}]})");
    // Not a raw string: moc misreads a backslash before a quote in one.
    row("escapes", "{\"name\": \"\\u00e9t\\u00e9 \\ud83d\\ude00 \\\"q\\\" \\\\ \\/ \\n\\t\"}");
    row("raw UTF-8", "{\"name\": \"spirals ünïcode 日本 😀\", \"ключ\": \"значение\"}");
    row("integers, unsigned, floats",
        R"([0, -0, 1, -1, 9223372036854775807, 9223372036854775808, 18446744073709551615,
            18446744073709551616, -9223372036854775808, -9223372036854775809, 1.0, -0.0, 1e3, 2E-3,
            1.7976931348623157e308, 5e-324, 0.1])");  // 1e-400 reads as 0 and is refused: errors(), "number too small"
    row("a UTF-8 byte-order mark", "\xEF\xBB\xBF{\"name\": \"x\"}");  // Windows Notepad writes one
    row("line and block comments", "// a preset\n{\"name\": \"x\" /* inline */, /* before */ \"n\": 1 // end\n}\n");
    row("whitespace everywhere", " \t\r\n{ \"a\" : [ 1 , { \"b\" : \"c\" } ] }\n\n");
    row("empty key and empty string", R"({"": ""})");
    row("an example experiment", R"({"name": "mnist-bf16", "dataset": {"kind": "mnist", "samples": 60000},
        "precision": {"autocast": "bf16", "layers": {"fc1": "fp32"},
        "loss_scaling": {"mode": "dynamic", "init_scale": 65536.0, "min_scale": null}}})");
}

void TestJsonText::validDocuments() {
    QFETCH(QString, text);
    const std::string t = text.toStdString();
    json out;
    const JsonProblem problem = parse_json(t, out);
    QVERIFY2(!problem.found, problem.sentence.c_str());
    const json expected = json::parse(t, nullptr, true, /*ignore_comments=*/true);
    QVERIFY2(same_kinds(out, expected), qPrintable(QString::fromStdString(out.dump().substr(0, 200))));
    QCOMPARE(out.dump(), expected.dump());
}

// The kind of each number, as nlohmann's lexer decides it, stated outright.
void TestJsonText::numberKinds_data() {
    QTest::addColumn<QString>("text");
    QTest::addColumn<int>("kind");
    const auto row = [](const char* text, json::value_t kind) {
        QTest::newRow(text) << QString(text) << static_cast<int>(kind);
    };
    row("0", json::value_t::number_unsigned);
    row("7", json::value_t::number_unsigned);
    row("18446744073709551615", json::value_t::number_unsigned);
    row("-1", json::value_t::number_integer);
    row("-9223372036854775808", json::value_t::number_integer);
    row("18446744073709551616", json::value_t::number_float);
    row("-9223372036854775809", json::value_t::number_float);
    row("1.0", json::value_t::number_float);
    row("1e3", json::value_t::number_float);
}

void TestJsonText::numberKinds() {
    QFETCH(QString, text);
    QFETCH(int, kind);
    json out;
    QVERIFY(!parse_json(("[" + text + "]").toStdString(), out).found);
    QCOMPARE(static_cast<int>(out.at(0).type()), kind);
}

void TestJsonText::duplicateKeys_data() {
    QTest::addColumn<QString>("text");
    QTest::addColumn<QString>("sentence");
    QTest::newRow("top level") << R"({"name": "a", "name": "b"})"
                               << "line 1, column 15: key name appears twice";
    QTest::newRow("second level") << R"({"dataset": {"kind": "csv", "path": "a", "kind": "csv"}})"
                                  << "line 1, column 42: key dataset.kind appears twice";
    QTest::newRow("third level, after a closed sibling") << R"({"a": {"x": {"k": 1}}, "p": {"q": {"k": 1, "k": 2}}})"
                                                         << "line 1, column 44: key p.q.k appears twice";
    QTest::newRow("different kinds of value") << R"({"a": {"b": [1], "b": {"c": 2}}})"
                                              << "line 1, column 18: key a.b appears twice";
    QTest::newRow("object in an array") << R"({"a": [{"b": 1}, {"b": 1, "b": 2}]})"
                                        << "line 1, column 27: key a.b appears twice";
    QTest::newRow("top-level array") << R"([{"x": 1}, {"x": 1, "x": 2}])"
                                     << "line 1, column 21: key x appears twice";
    QTest::newRow("deep, arrays between") << R"({"a": {"b": [{"c": {"d": [1, {"e": 1, "e": 2}]}}]}})"
                                          << "line 1, column 39: key a.b.c.d.e appears twice";
    QTest::newRow("the outer key twice, after its group") << R"({"a": {"b": {"c": 1}}, "a": 2})"
                                                          << "line 1, column 24: key a appears twice";
    QTest::newRow("spelled differently, the same key") << R"({"lr": 1, "\u006cr": 2})"
                                                       << "line 1, column 11: key lr appears twice";
    QTest::newRow("between comments") << "{\"a\": 1, // one\n \"a\": /* two */ 2}"
                                      << "line 2, column 2: key a appears twice";
}

void TestJsonText::duplicateKeys() {
    QFETCH(QString, text);
    QFETCH(QString, sentence);
    json out;
    const JsonProblem problem = parse_json(text.toStdString(), out);
    QVERIFY(problem.found);
    QVERIFY(!problem.syntax);  // valid JSON that we refuse
    QCOMPARE(QString::fromStdString(problem.sentence), sentence);
}

// One row per kind of mistake, with the whole sentence: the CLI and the GUI print it after the
// file name ("Experiment file F is not valid JSON: SENTENCE."). The texts are bytes (QByteArray), so
// that a row can hold a byte that is not UTF-8.
void TestJsonText::errors_data() {
    QTest::addColumn<QByteArray>("text");
    QTest::addColumn<bool>("syntax");
    QTest::addColumn<QString>("sentence");
    const auto row = [](const char* name, const QByteArray& text, const QString& sentence, bool syntax = true) {
        QTest::newRow(name) << text << syntax << sentence;
    };
    const QString not_a_value =
        ", which is not a JSON value (a value is a number, a \"string\", true, false, null, [...] or {...}; "
        "NaN and Infinity are not JSON)";
    const QString non_finite = "; NaN and Infinity are not JSON: write a finite number";
    const QString escapes =
        " is not an escape JSON knows: the escapes are \\\" \\\\ \\/ \\b \\f \\n \\r \\t and \\u with four hex digits, "
        "so a backslash itself is written \\\\";
    const QString single_quotes = " in single quotes; JSON strings take double quotes";

    // numbers JSON cannot hold, and NaN / Infinity
    row("number too large", R"({"a": 1e999})",
        "line 1, column 7: the number 1e999 is too large (a number must lie within about ±1.8e308)", false);
    row("negative number too large, line 2", "[1,\n  -2e400]",
        "line 2, column 3: the number -2e400 is too large (a number must lie within about ±1.8e308)", false);
    row("number too small", R"({"a": 1e-400})",
        "line 1, column 7: the number 1e-400 is too small: it is not 0, but it would be read as 0 (a number other than 0 "
        "must be at least about 4.9e-324 in size); write 0 if 0 is meant",
        false);
    row("negative number too small after others, line 2", "[0, 1e-300, 0.0e-999,\n  -0.00000000000000000000000000000001e-300]",
        "line 2, column 3: the number -0.000000000000000000000… is too small: it is not 0, but it would be read as 0 (a "
        "number other than 0 must be at least about 4.9e-324 in size); write 0 if 0 is meant",
        false);
    row("NaN", R"({"a": NaN})", "line 1, column 7: expected a value, found 'NaN'" + non_finite);
    row("-Infinity", R"({"a": -Infinity})", "line 1, column 7: expected a value, found '-Infinity'" + non_finite);
    row("nan in an array", "[nan]", "line 1, column 2: expected a value, found 'nan'" + non_finite);

    // words that are no JSON value, told at the word's start (the lexer stops after or inside it)
    row("misspelled literal", R"({"a": tru})", "line 1, column 7: expected a value, found 'tru'" + not_a_value);
    row("misspelled literal, a space after it", R"({"a": fals })",
        "line 1, column 7: expected a value, found 'fals'" + not_a_value);
    row("word that starts like a literal", "[nul, 1]", "line 1, column 2: expected a value, found 'nul'" + not_a_value);
    row("key that starts like a literal", "{tr@: 1}", "line 1, column 2: expected a key in double quotes, found 'tr@'");
    row("bare word", R"({"a": undefined})", "line 1, column 7: expected a value, found 'undefined'" + not_a_value);
    row("Python True", R"({"master_weights": True})",
        "line 1, column 20: expected a value, found 'True'; JSON writes true in lower case");
    row("Python False", "[False]",
        "line 1, column 2: expected a value, found 'False'; JSON writes false in lower case");
    row("Python None", R"({"min_scale": None})", "line 1, column 15: expected a value, found 'None'; JSON writes null");

    // quotes
    row("single-quoted key", "{'a': 1}",
        "line 1, column 2: expected a key in double quotes, found 'a'" + single_quotes);
    row("single-quoted value", R"({"name": 'mnist'})",
        "line 1, column 10: expected a value, found 'mnist'" + single_quotes);
    row("single-quoted everything, line 2", "{\n  'name': 'x'}",
        "line 2, column 3: expected a key in double quotes, found 'name'" + single_quotes);
    row("a lone single quote", "{\"a\": 'x}",
        "line 1, column 7: expected a value, found a single quote ('); JSON strings take double quotes");
    row("unquoted key", "{lr: 0.01}",
        "line 1, column 2: expected a key in double quotes, found lr without quotes; write \"lr\"");
    row("unquoted key that starts like null", "{\n  \"train\": {name: 1}}",
        "line 2, column 13: expected a key in double quotes, found name without quotes; write \"name\"");
    row("typographic quotes",
        "{\xE2\x80\x9C"
        "a\xE2\x80\x9D: 1}",
        "line 1, column 2: expected a key in double quotes, found “, a typographic quote; JSON strings take plain "
        "double quotes (\")");
    row("key not a string", "{1:2}",
        "line 1, column 2: expected a key in double quotes, found the number 1; write \"1\"");
    row("key true", "{true: 1}", "line 1, column 2: expected a key in double quotes, found true; write \"true\"");

    // commas
    row("trailing comma in an object", R"({"a": 1,})",
        "line 1, column 9: expected a key in double quotes, found '}'; JSON allows no comma after the last member: "
        "remove the comma at line 1, column 8");
    row("trailing comma in an object, comment between", "{\n  \"a\": 1, // the last\n}",
        "line 3, column 1: expected a key in double quotes, found '}'; JSON allows no comma after the last member: "
        "remove the comma at line 2, column 9");
    row("trailing comma in an array", "[1,]",
        "line 1, column 4: expected a value, found ']'; JSON allows no comma after the last element: remove the comma "
        "at line 1, column 3");
    row("trailing comma in a nested array", R"({"hidden": [512, 256,]})",
        "line 1, column 22: expected a value, found ']'; JSON allows no comma after the last element: remove the comma "
        "at line 1, column 21");
    row("double comma, line 3", "{\n  \"a\": [1,\n   2,,\n]}",
        "line 3, column 6: expected a value, found ','; there are two commas in a row");
    row("double comma in an object", R"({"a": 1,, "b": 2})",
        "line 1, column 9: expected a key in double quotes, found ','; there are two commas in a row");
    row("missing comma between members", R"({"a":1 "b":2})",
        "line 1, column 8: expected ',' or '}', found the string \"b\"; a comma is missing before it");
    row("missing comma at the end of a line", "{\n  \"a\": {\"x\": 1}\n  \"b\": 2\n}",
        "line 3, column 3: expected ',' or '}', found the string \"b\"; a comma is missing before it");
    row("missing comma after a comment", R"({"a": 1 /* one */ "b": 2})",
        "line 1, column 19: expected ',' or '}', found the string \"b\"; a comma is missing before it");
    row("missing comma in an array", "[1 2]",
        "line 1, column 4: expected ',' or ']', found the number 2; a comma is missing before it");
    row("missing comma between objects in an array", R"([{"a": 1} {"a": 2}])",
        "line 1, column 11: expected ',' or ']', found '{'; a comma is missing before it");

    // colons
    row("missing colon", R"({"a" 1})",
        "line 1, column 6: expected ':', found the number 1; a colon separates a key from its value");
    row("missing colon before an object", R"({"train" {}})",
        "line 1, column 10: expected ':', found '{'; a colon separates a key from its value");
    row("equals sign for a colon", R"({"lr" = 1})",
        "line 1, column 7: expected ':', found '='; a colon separates a key from its value");
    row("a key without a value", R"({"a"})",
        "line 1, column 5: expected ':', found '}'; a colon separates a key from its value");
    row("a key in an array", R"(["a": 1])",
        "line 1, column 5: expected ',' or ']', found ':'; an array holds values only: key-value pairs go in an object "
        "{...}");

    // strings
    row("unclosed string", R"("abc)", "line 1, column 1: the string that begins \"abc has no closing double quote");
    row("unclosed string at the end of a line", "{\n  \"name\": \"mnist,\n  \"seed\": 1\n}",
        "line 2, column 11: the string that begins \"mnist, has no closing double quote on its line; a line break "
        "inside a string "
        "is written \\n");
    row("unclosed key runs to the end", R"({"name: 1})",
        "line 1, column 2: the string that begins \"name: 1} has no closing double quote");
    row("quote missing mid-line", R"({"name": "abc, "lr": 1})",
        "line 1, column 17: expected ',' or '}', found lr right after the string \"abc, \", so a double quote in that "
        "string is likely missing or misplaced");
    row("bad escape", R"("\q")", "line 1, column 2: \\q" + escapes);
    row("Windows path", R"({"path": "C:\data\x.csv"})", "line 1, column 13: \\d" + escapes);
    row("short \\u escape", R"(["\u12"])",
        "line 1, column 3: \\u12 is not an escape: \\u takes four hex digits, as in \\u00e9");
    row("\\u without digits", R"(["\u{1F600}"])",
        "line 1, column 3: \\u must be followed by four hex digits, as in \\u00e9");
    row("unpaired surrogate", R"(["\ud83d"])",
        "line 1, column 3: \\ud83d is the first half of a character written as two \\u escapes (a UTF-16 surrogate "
        "pair) and must be followed by the second half, \\udc00 to \\udfff");
    row("tab in a string", "\"a\tb\"", "line 1, column 3: a tab inside a string must be written \\t");
    row("control character in a string", "[\"a\x01\"]",
        "line 1, column 4: the control character U+0001 (SOH) inside a string must be written \\u0001");
    row("not UTF-8 in a string", "[\"caf\xE9\"]",
        "line 1, column 7: a string holds bytes that are not UTF-8 text; save the file as UTF-8");

    // comments
    row("unclosed comment", "/* open", "line 1, column 1: the comment /* is not closed; end it with */");
    row("unclosed comment after the value", "{\"a\": 1}\n/* note",
        "line 2, column 1: the comment /* is not closed; end it with */");
    row("hash comment", "{\n  # learning rate\n  \"lr\": 1}",
        "line 2, column 3: expected a key in double quotes, found '#'; JSON has no # comments: write // or /* */ "
        "instead");
    row("a slash that starts no comment", "[1 / 2]",
        "line 1, column 4: expected ',' or ']', found '/', which starts no comment (a comment is // to the end of the "
        "line, or /* ... */)");

    // brackets and the end of the text
    row("empty", "", "line 1, column 1: expected a value, found the end of the text");
    row("only a comment", "// nothing", "line 1, column 11: expected a value, found the end of the text");
    row("unclosed object", R"({"a":1)",
        "line 1, column 7: the text ends before the object opened at line 1, column 1 is closed with '}'");
    row("unclosed array", "[1, 2",
        "line 1, column 6: the text ends before the array opened at line 1, column 1 is closed with ']'");
    row("truncated file", "{\n  \"train\": {\"lr\": 0.01,\n",
        "line 3, column 1: the text ends before the object opened at line 2, column 12 is closed with '}' (1 more "
        "around it is not closed either)");
    row("unclosed array in an object", "{\"a\": [1, 2\n",
        "line 2, column 1: the text ends before the array opened at line 1, column 7 is closed with ']' (1 more around "
        "it is not closed either)");
    row("array closed with a brace", R"({"a": [1, 2}})",
        "line 1, column 12: expected ',' or ']', found '}', but the array opened at line 1, column 7 closes with ']'");
    row("object closed with a bracket", R"([{"a": 1]])",
        "line 1, column 9: expected ',' or '}', found ']', but the object opened at line 1, column 2 closes with '}'");
    row("one brace too many", "{}}",
        "line 1, column 3: expected the end of the text, found '}'; the JSON value ended at line 1, column 2, so this "
        "'}' closes nothing");
    row("one brace too many, line 3", "{\n  \"a\": {\"b\": 1}}\n}",
        "line 3, column 1: expected the end of the text, found '}'; the JSON value ended at line 2, column 16, so this "
        "'}' closes nothing");
    row("two documents", R"({"a": 1} {"b": 2})",
        "line 1, column 10: expected the end of the text, found '{'; the text holds one JSON value, which ended at "
        "line 1, column 8");
    row("a comma after the document", R"({"a": 1},)",
        "line 1, column 9: expected the end of the text, found ','; the text holds one JSON value, which ended at line "
        "1, column 8");
    row("no opening brace", R"("name": "x", "seed": 1)",
        "line 1, column 7: expected the end of the text, found ':'; is the opening '{' missing at the start?");

    // numbers
    row("leading zero", "01",
        "line 1, column 1: found '01', a number with a leading zero, which JSON does not allow; write 1");
    row("leading zero in an object", R"({"seed": 007})",
        "line 1, column 10: found '007', a number with a leading zero, which JSON does not allow; write 7");
    row("negative leading zero", "[-01]",
        "line 1, column 2: found '-01', a number with a leading zero, which JSON does not allow; write -1");
    row("plus sign", R"({"lr": +0.5})",
        "line 1, column 8: found '+0.5', a number with a plus sign, which JSON does not allow; write 0.5");
    row("no digit before the point", R"({"lr": .5})",
        "line 1, column 8: found '.5', a number with no digit before its point, which JSON does not allow; write 0.5");
    row("no digit after the point", "[1.]",
        "line 1, column 2: found '1.', a number with no digit after its point, which JSON does not allow; write 1.0");
    row("no exponent digits", "[1e]",
        "line 1, column 2: found '1e', a number with no digits in its exponent, which JSON does not allow; write e.g. "
        "1e3");
    row("no exponent digits after the sign", "[2e-]",
        "line 1, column 2: found '2e-', a number with no digits in its exponent, which JSON does not allow; write e.g. "
        "2e-3");
    row("a lone minus", "[-]",
        "line 1, column 2: expected a value, found '-', which is not a number: a minus sign must be followed by a "
        "digit");
    row("hexadecimal", "[0x1F]",
        "line 1, column 2: found '0x1F', a number in hexadecimal, which JSON does not allow; write 31");

    // characters between values
    row("byte-order mark, positions after it", "\xEF\xBB\xBF{\"a\": 1,}",
        "line 1, column 9: expected a key in double quotes, found '}'; JSON allows no comma after the last member: "
        "remove the comma at line 1, column 8");
    row("columns count characters", R"({"é": tru})",
        "line 1, column 7: expected a value, found 'tru', which is not a JSON value (a value is a number, a "
        "\"string\", true, false, null, [...] or {...}; NaN and Infinity are not JSON)");
    row("no-break space", "{\xC2\xA0\"a\": 1}",
        "line 1, column 2: expected a key in double quotes, found a no-break space (U+00A0); JSON allows only plain "
        "spaces, tabs and line breaks between values");
    row("control character between values", "[\x01]",
        "line 1, column 2: expected a value, found the control character U+0001, which JSON does not allow between "
        "values");
    row("not UTF-8 between values", "[\xE9]",
        "line 1, column 2: expected a value, found a byte that is not UTF-8 text; save the file as UTF-8");
}

void TestJsonText::errors() {
    QFETCH(QByteArray, text);
    QFETCH(bool, syntax);
    QFETCH(QString, sentence);
    json out;
    const JsonProblem problem = parse_json(text.toStdString(), out);
    QVERIFY(problem.found);
    QCOMPARE(problem.syntax, syntax);
    QCOMPARE(QString::fromStdString(problem.sentence), sentence);
}

// One level deeper than max_json_depth is refused (valid JSON, so not syntax) at the line and
// column of the first array or object too deep, naming where it lies: brackets inside strings and
// comments do not count. Far deeper text is refused the same way, never read to its end.
void TestJsonText::tooDeep_data() {
    QTest::addColumn<QByteArray>("text");
    QTest::addColumn<QString>("sentence");
    const auto repeat = [](const std::string& s, int n) {
        std::string out;
        for (int i = 0; i < n; ++i) out += s;
        return out;
    };
    const std::string limit = " is nested 513 levels deep; at most 512 levels of arrays and objects inside each other are read";
    QTest::newRow("arrays") << QByteArray::fromStdString(nested_arrays(max_json_depth + 1))
                            << QString::fromStdString("line 1, column 513: the array at " + repeat("[0]", 20) + "..." +
                                                      repeat("[0]", 20) + limit);
    QTest::newRow("300000 arrays") << QByteArray::fromStdString(nested_arrays(300000))
                                   << QString::fromStdString("line 1, column 513: the array at " + repeat("[0]", 20) +
                                                             "..." + repeat("[0]", 20) + limit);
    // {"a":{"a":...}}: each level 5 characters, the 513th '{' at column 2561.
    QTest::newRow("objects") << QByteArray::fromStdString(repeat(R"({"a":)", 513) + "1" + repeat("}", 513))
                             << QString::fromStdString("line 1, column 2561: the object at a" + repeat(".a", 29) +
                                                       "...a" + repeat(".a", 29) + limit);
    // After a string and a comment holding brackets, on line 2: {"s": "[{"", // [[
    //  "m": [{"a":[{"a": ... one object, then 256 arrays of objects: the 513th level is an object.
    const std::string text = "{\"s\": \"[{\\\"\", // [[\n \"m\": " + nested_arrays_of_objects(256) + "}";
    QTest::newRow("brackets in a string and a comment do not count")
        << QByteArray::fromStdString(text)
        << QString::fromStdString("line 2, column 1538: the object at m" + repeat("[0].a", 11) + "[0]...a" +
                                  repeat("[0].a", 11) + "[0]" + limit);
}

void TestJsonText::tooDeep() {
    QFETCH(QByteArray, text);
    QFETCH(QString, sentence);
    json out;
    const JsonProblem problem = parse_json(text.toStdString(), out);
    QVERIFY(problem.found);
    QVERIFY(!problem.syntax);  // json::parse reads it: valid JSON that we refuse
    QCOMPARE(QString::fromStdString(problem.sentence), sentence);
}

// Every text one typo away from a good experiment file (each byte deleted, each of some troublesome
// characters inserted before each byte) that fails, fails with a sentence that starts with a line
// and column inside the text, is UTF-8, and speaks none of nlohmann's words.
void TestJsonText::everyMistakeHasAPlace() {
    const std::string good =
        "// a preset\n{\"name\": \"mnist-bf16\", \"dataset\": {\"kind\": \"mnist\"},\n"
        "  \"train\": {\"lr\": 0.01, \"seed\": 7, \"tag\": \"\u00e9t\u00e9 \\\" été\"},\n"
        "  /* widths */ \"model\": {\"hidden\": [512, 256, -1.5e3, true, null]}}\n";
    json out;
    QVERIFY2(!parse_json(good, out).found, "the unmutated text parses");
    std::vector<std::string> texts;
    for (std::size_t i = 0; i < good.size(); ++i) {
        texts.push_back(good.substr(0, i) + good.substr(i + 1));
        for (const char* c : {"\"", "'", ",", "}", "]", "{", ":", "\\", "x", "\n", "/", "0", "\xE9", "\xC2\xA0"})
            texts.push_back(good.substr(0, i) + c + good.substr(i));
    }
    const QRegularExpression place(QStringLiteral("^line (\\d+), column (\\d+): \\S"));
    int failures = 0;
    for (const std::string& text : texts) {
        const JsonProblem problem = parse_json(text, out);
        if (!problem.found || !problem.syntax) continue;
        ++failures;
        const QString sentence = QString::fromStdString(problem.sentence);
        const auto where =
            qPrintable(sentence + "  <=  " + QString::fromLatin1(QByteArray::fromStdString(text).toPercentEncoding()));
        QVERIFY2(sentence.toStdString() == problem.sentence, where);  // well-formed UTF-8: it survives a round trip
        const auto m = place.match(sentence);
        QVERIFY2(m.hasMatch(), where);
        const QStringList lines = QString::fromUtf8(QByteArray::fromStdString(text)).split(QLatin1Char('\n'));
        const int line = m.captured(1).toInt();
        const int column = m.captured(2).toInt();
        QVERIFY2(line >= 1 && line <= lines.size(), where);
        QVERIFY2(column >= 1 && column <= lines[line - 1].size() + 1, where);
        for (const char* jargon : {"literal", "last read", "syntax error", "invalid", "<U+", "'{''"})
            QVERIFY2(!sentence.contains(QLatin1String(jargon)), where);
    }
    QVERIFY(failures > 1000);  // most typos break the text
}

// A parser used again after an error starts clean: nothing of a failed parse leaks into the next.
void TestJsonText::independentCalls() {
    json out;
    QVERIFY(parse_json(R"({"a": {"b": 1, "b": 2}})", out).found);
    QVERIFY(parse_json("[1, {", out).found);
    const JsonProblem problem = parse_json(R"({"a": {"b": 1}, "c": [2]})", out);
    QVERIFY(!problem.found);
    QVERIFY(problem.sentence.empty());
    QCOMPARE(out, json::parse(R"({"a": {"b": 1}, "c": [2]})"));
}
QTEST_APPLESS_MAIN(TestJsonText)
#include "test_json_text.moc"
