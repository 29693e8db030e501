// The JSON text parser behind experiment files and --set (train/json_text): valid documents give
// exactly what json::parse gives (the same integer, unsigned and float kinds), a key twice in one
// object is refused with its dotted path at any depth, and each kind of syntax error reads as one
// plain sentence with its line and column. The slots are defined outside the class because moc
// misreads the raw string literals (R"(...)") that hold the documents.
#include <QtTest>

#include <string>

#include <nlohmann/json.hpp>

#include "train/json_text.h"

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
    row("deep arrays of objects", nested_arrays_of_objects(300));
    row("deep arrays", nested_arrays(500));
    row("same key in two objects", R"({"train": {"lr": 0.1}, "layers": {"lr": 1}, "x": [{"lr": 2}, {"lr": 3}]})");
    // Not a raw string: moc misreads a backslash before a quote in one.
    row("escapes", "{\"name\": \"\\u00e9t\\u00e9 \\ud83d\\ude00 \\\"q\\\" \\\\ \\/ \\n\\t\"}");
    row("raw UTF-8", "{\"name\": \"spirals ünïcode 日本 😀\", \"ключ\": \"значение\"}");
    row("integers, unsigned, floats",
        R"([0, -0, 1, -1, 9223372036854775807, 9223372036854775808, 18446744073709551615,
            18446744073709551616, -9223372036854775808, -9223372036854775809, 1.0, -0.0, 1e3, 2E-3,
            1.7976931348623157e308, 5e-324, 1e-400, 0.1])");
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
                               << "key name appears twice";
    QTest::newRow("second level") << R"({"dataset": {"kind": "csv", "path": "a", "kind": "csv"}})"
                                  << "key dataset.kind appears twice";
    QTest::newRow("third level, after a closed sibling") << R"({"a": {"x": {"k": 1}}, "p": {"q": {"k": 1, "k": 2}}})"
                                                         << "key p.q.k appears twice";
    QTest::newRow("different kinds of value") << R"({"a": {"b": [1], "b": {"c": 2}}})"
                                              << "key a.b appears twice";
    QTest::newRow("object in an array") << R"({"a": [{"b": 1}, {"b": 1, "b": 2}]})"
                                        << "key a.b appears twice";
    QTest::newRow("top-level array") << R"([{"x": 1}, {"x": 1, "x": 2}])"
                                     << "key x appears twice";
    QTest::newRow("deep, arrays between") << R"({"a": {"b": [{"c": {"d": [1, {"e": 1, "e": 2}]}}]}})"
                                          << "key a.b.c.d.e appears twice";
    QTest::newRow("the outer key twice, after its group") << R"({"a": {"b": {"c": 1}}, "a": 2})"
                                                          << "key a appears twice";
    QTest::newRow("spelled differently, the same key") << R"({"lr": 1, "\u006cr": 2})"
                                                       << "key lr appears twice";
    QTest::newRow("between comments") << "{\"a\": 1, // one\n \"a\": /* two */ 2}"
                                      << "key a appears twice";
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

// One row per kind of error, with the whole sentence: the CLI and the GUI print it after the
// file name ("Experiment file F is not valid JSON: SENTENCE.").
void TestJsonText::errors_data() {
    QTest::addColumn<QString>("text");
    QTest::addColumn<bool>("syntax");
    QTest::addColumn<QString>("sentence");
    const QString not_a_value =
        ", which is not a JSON value (a value is a number, a \"string\", true, false, null, [...] or {...}; "
        "NaN and Infinity are not JSON)";
    const QString non_finite = "; NaN and Infinity are not JSON: write a finite number";
    QTest::newRow("number too large")
        << R"({"a": 1e999})" << false
        << "line 1, column 7: the number 1e999 is too large (a number must lie within about ±1.8e308)";
    QTest::newRow("negative number too large, line 2")
        << "[1,\n  -2e400]" << false
        << "line 2, column 3: the number -2e400 is too large (a number must lie within about ±1.8e308)";
    QTest::newRow("NaN") << R"({"a": NaN})" << true << "line 1, column 7: expected a value, found 'NaN'" + non_finite;
    QTest::newRow("-Infinity") << R"({"a": -Infinity})" << true
                               << "line 1, column 8: expected a value, found '-Infinity'" + non_finite;
    QTest::newRow("nan in an array") << "[nan]" << true
                                     << "line 1, column 3: expected a value, found 'nan'" + non_finite;
    QTest::newRow("misspelled literal") << R"({"a": tru})" << true
                                        << "line 1, column 10: expected a value, found 'tru'" + not_a_value;
    QTest::newRow("bare word") << R"({"a": undefined})" << true
                               << "line 1, column 7: expected a value, found 'undefined'" + not_a_value;
    QTest::newRow("trailing comma in an object")
        << R"({"a": 1,})" << true << "line 1, column 9: expected a key in double quotes, found '}'";
    QTest::newRow("trailing comma in an array") << "[1,]" << true << "line 1, column 4: expected a value, found ']'";
    QTest::newRow("double comma, line 3")
        << "{\n  \"a\": [1,\n   2,,\n]}" << true << "line 3, column 6: expected a value, found ','";
    QTest::newRow("missing colon") << R"({"a" 1})" << true << "line 1, column 6: expected ':', found a number";
    QTest::newRow("missing comma") << R"({"a":1 "b":2})" << true << "line 1, column 10: expected '}', found a string";
    QTest::newRow("key not a string") << "{1:2}" << true
                                      << "line 1, column 2: expected a key in double quotes, found a number";
    QTest::newRow("unclosed object") << R"({"a":1)" << true
                                     << "line 1, column 7: expected '}', found the end of the text";
    QTest::newRow("unclosed array") << "[1, 2" << true << "line 1, column 6: expected ']', found the end of the text";
    QTest::newRow("empty") << "" << true << "line 1, column 1: expected a value, found the end of the text";
    QTest::newRow("text after the value")
        << "{}}" << true << "line 1, column 3: expected the end of the text, found '}'";
    QTest::newRow("leading zero") << "01" << true << "line 1, column 2: expected the end of the text, found a number";
    QTest::newRow("no digit after the point")
        << "[1.]" << true
        << "line 1, column 4: expected a value, found '1.', which is not a number (expected digit after '.')";
    QTest::newRow("no exponent digits") << "[1e]" << true
                                        << "line 1, column 4: expected a value, found '1e', which is not a number "
                                           "(expected '+', '-', or digit after exponent)";
    QTest::newRow("unclosed string")
        << R"("abc)" << true
        << "line 1, column 5: expected a value, found 'abc' (invalid string: missing closing quote)";
    QTest::newRow("control character in a string")
        << "\"a\tb\"" << true
        << "line 1, column 3: expected a value, found 'a' (invalid string: control character U+0009 (HT) must be "
           "escaped to \\u0009 or \\t)";
}

void TestJsonText::errors() {
    QFETCH(QString, text);
    QFETCH(bool, syntax);
    QFETCH(QString, sentence);
    json out;
    const JsonProblem problem = parse_json(text.toStdString(), out);
    QVERIFY(problem.found);
    QCOMPARE(problem.syntax, syntax);
    QCOMPARE(QString::fromStdString(problem.sentence), sentence);
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
