// Hostile experiment files: NUL bytes (which the JSON library would take for the end of the text,
// ignoring what follows), UTF-16 and UTF-32 text, \u0000 in a key or a value, control characters
// and bytes that are not UTF-8 quoted in a message. Each ends in one sentence that names the file
// and, where there is one, the line and column, with such bytes escaped (\0, \xE9) so the message
// is never cut short and stays valid UTF-8.
#include <QtTest>

#include <fstream>
#include <functional>
#include <string>

#include <nlohmann/json.hpp>

#include "error.h"
#include "config/experiment.h"
#include "config/json_text.h"

using namespace mantissa;

namespace {

std::string error_of(const std::function<void()>& f) {
    try {
        f();
    } catch (const Error& e) {
        return e.what();
    }
    return {};
}

std::string write_file(const QTemporaryDir& dir, const std::string& name, const std::string& bytes) {
    const std::string path = dir.path().toStdString() + "/" + name;
    std::ofstream(path, std::ios::binary) << bytes;
    return path;
}

bool is_utf8(const std::string& s) {
    return QString::fromUtf8(s.data(), static_cast<int>(s.size())).toUtf8().toStdString() == s;
}

}  // namespace

class TestExperimentFaults : public QObject {
    Q_OBJECT

private slots:
    // The whole file is refused, at the place a person can find.
    void loadRefuses_data() {
        QTest::addColumn<QByteArray>("bytes");
        QTest::addColumn<QString>("expected");  // after "Experiment file <path>"
        const auto b = [](const char* s, int n) { return QByteArray(s, n); };
        QTest::newRow("NUL after the object: not ignored")
            << b("{\"name\": \"x\"}\0{\"train\": garbage", 31)
            << " is not valid JSON: line 1, column 14: a NUL byte (\\0), which JSON text cannot hold: the file is binary or damaged.";
        QTest::newRow("NUL inside a string")
            << b("{\n  \"name\": \"a\0b\"\n}", 19)
            << " is not valid JSON: line 2, column 13: a NUL byte (\\0), which JSON text cannot hold: the file is binary or damaged.";
        QTest::newRow("NUL in a comment") << b("// a\0\n{}", 8)
                                          << " is not valid JSON: line 1, column 5: a NUL byte (\\0), which JSON text cannot hold: the file is binary or damaged.";
        QTest::newRow("NUL after a UTF-8 BOM and a wide character")
            << b("\xEF\xBB\xBF{\"name\": \"\xC3\xA9\0\"}", 18)
            << " is not valid JSON: line 1, column 12: a NUL byte (\\0), which JSON text cannot hold: the file is binary or damaged.";
        QTest::newRow("UTF-16LE with BOM") << b("\xFF\xFE{\0}\0", 6)
                                           << " is not valid JSON: it is UTF-16 text (it starts with a UTF-16 byte-order mark); save it as UTF-8.";
        QTest::newRow("UTF-16BE with BOM") << b("\xFE\xFF\0{\0}", 6)
                                           << " is not valid JSON: it is UTF-16 text (it starts with a UTF-16 byte-order mark); save it as UTF-8.";
        QTest::newRow("UTF-16LE without BOM") << b("{\0\"\0a\0\"\0:\0" "1\0}\0", 14)
                                              << " is not valid JSON: it looks like UTF-16 text (every second byte is NUL); save it as UTF-8.";
        QTest::newRow("UTF-32LE with BOM") << b("\xFF\xFE\0\0{\0\0\0}\0\0\0", 12)
                                           << " is not valid JSON: it is UTF-32 text (it starts with a UTF-32 byte-order mark); save it as UTF-8.";
        QTest::newRow("\\u0000 in a key") << QByteArray("{\"na\\u0000me\": \"x\"}")
                                          << ", line 1, column 5: the string \"na\\u0000me\" holds \\u0000, a NUL character, which a key, a name or a path cannot hold.";
        QTest::newRow("\\u0000 in a path")
            << QByteArray("{\"dataset\": {\"kind\": \"csv\",\n \"path\": \"/tmp/a\\u0000.csv\"}}")
            << ", line 2, column 17: the string \"/tmp/a\\u0000.csv\" holds \\u0000, a NUL character, which a key, a name or a path cannot hold.";
        QTest::newRow("\\u0000 after an escaped backslash is found, not the text \\\\u0000")
            << QByteArray("{\"name\": \"a\\\\u0000\", \"x\\u0000\": 1}")
            << ", line 1, column 24: the string \"x\\u0000\" holds \\u0000, a NUL character, which a key, a name or a path cannot hold.";
        QTest::newRow("a byte that is not UTF-8, quoted escaped")
            << QByteArray("{\"name\": caf\xE9}")
            << " is not valid JSON: line 1, column 10: expected a value, found 'caf\\xE9', which is not a JSON value (a value is a number, a \"string\", true, false, null, [...] or {...}; NaN and Infinity are not JSON).";
    }
    void loadRefuses() {
        QFETCH(QByteArray, bytes);
        QFETCH(QString, expected);
        QTemporaryDir dir;
        const std::string path = write_file(dir, "e.json", bytes.toStdString());
        const std::string message = error_of([&] { load_experiment(path); });
        QCOMPARE(QString::fromStdString(message), "Experiment file " + QString::fromStdString(path) + expected);
        QVERIFY(is_utf8(message));
    }

    // A key nobody knows, written with escapes for control characters, is quoted escaped: the
    // sentence stays one line.
    void unknownKeyWithControlCharactersIsEscaped() {
        QTemporaryDir dir;
        const std::string path = write_file(dir, "k.json", "{\"na\\u0001\\nme\": 1}");
        const std::string message = error_of([&] { load_experiment(path); });
        QVERIFY2(message.find("na\\x01\\nme") != std::string::npos, message.c_str());
        QVERIFY2(message.find('\n') == std::string::npos && message.find('\x01') == std::string::npos, message.c_str());
        QVERIFY(message.starts_with("Experiment file " + path + ": "));
    }

    // The same text through parse_json: a NUL byte is syntax (not JSON at all), \u0000 is refused
    // JSON; the same text without them parses as json::parse does.
    void parseJsonAgreesWithJsonParseOtherwise() {
        nlohmann::json out;
        JsonProblem p = parse_json(std::string("[1]\0", 4), out);
        QVERIFY(p.found && p.syntax);
        p = parse_json("[\"\\u0000\"]", out);
        QVERIFY(p.found && !p.syntax);
        QCOMPARE(QString::fromStdString(p.sentence),
                 QString("line 1, column 3: the string \"\\u0000\" holds \\u0000, a NUL character, which a key, a name or a path cannot hold"));
        p = parse_json("{\"a\": \"\\u0001\"}", out);  // other control characters are fine in a value
        QVERIFY(!p.found);
        QCOMPARE(out, nlohmann::json::parse("{\"a\": \"\\u0001\"}"));
    }
};

QTEST_GUILESS_MAIN(TestExperimentFaults)
#include "test_experiment_faults.moc"
