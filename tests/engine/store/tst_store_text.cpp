// The checks on run names, notes and tags (store/run_text.h) through the RunStore API that every
// caller uses (CLI, GUI, recorder): text that is not UTF-8, control characters, lengths. A refused
// edit leaves the stored value as it was. And printable_text(), which the CLI's tables print with.
#include <QTemporaryDir>
#include <QtTest>

#include "error.h"
#include "store/run_store.h"
#include "store/run_text.h"
#include "store_test_util.h"

using namespace mantissa;
using namespace store_test;

class StoreText : public QObject {
    Q_OBJECT

private:
    QTemporaryDir m_dir;
    std::unique_ptr<RunStore> m_store;
    std::int64_t m_run = 0;

private slots:
    void initTestCase() {
        QVERIFY(m_dir.isValid());
        m_store = std::make_unique<RunStore>(m_dir.filePath("text.sqlite").toStdString());
        auto rec = m_store->start_run({"original", "cpu", "test", "{}"});
        m_run = rec->run_id();
        rec->finish(RunStatus::completed);
        m_store->set_notes(m_run, "kept notes");
        m_store->set_tags(m_run, "kept");
    }

    void textIsChecked_data() {
        QTest::addColumn<QString>("field");
        QTest::addColumn<QByteArray>("text");
        QTest::addColumn<QString>("expected");  // empty: accepted
        const QByteArray e_acute("\xc3\xa9");
        QTest::newRow("name: bad bytes") << "name" << QByteArray("bad\xff\xfename")
                                         << "The run name must be valid UTF-8 text.";
        QTest::newRow("name: overlong slash") << "name" << QByteArray("a\xc0\xaf") << "must be valid UTF-8";
        QTest::newRow("name: surrogate") << "name" << QByteArray("a\xed\xa0\x80") << "must be valid UTF-8";
        QTest::newRow("name: cut short") << "name" << QByteArray("caf\xc3") << "must be valid UTF-8";
        QTest::newRow("name: escape code") << "name" << QByteArray("a\x1b[31mred")
                                           << "The run name must not contain control characters (U+001B (escape) "
                                              "at character 2).";
        QTest::newRow("name: line break") << "name" << QByteArray("two\nlines") << "U+000A (a line break)";
        QTest::newRow("name: C1 control") << "name" << QByteArray("a\xc2\x9b") << "U+009B";
        QTest::newRow("name: 201 characters") << "name" << e_acute.repeated(201)
                                              << "The run name is 201 characters long; a run name may have at "
                                                 "most 200.";
        QTest::newRow("name: 200 characters") << "name" << e_acute.repeated(200) << "";
        QTest::newRow("name: unicode") << "name" << QByteArray("caf\xc3\xa9 \xf0\x9f\x9a\x80 fp16") << "";
        QTest::newRow("notes: bad bytes") << "notes" << QByteArray("x\xff") << "The run notes must be valid UTF-8 text.";
        QTest::newRow("notes: lines and tabs") << "notes" << QByteArray("line 1\nline 2\tcolumn") << "";
        QTest::newRow("notes: bell") << "notes" << QByteArray("\x07") << "line breaks and tabs are allowed";
        QTest::newRow("notes: carriage return") << "notes" << QByteArray("a\rb") << "U+000D";
        QTest::newRow("notes: too long") << "notes" << QByteArray(100001, 'n')
                                         << "The run notes are 100001 characters long";
        QTest::newRow("notes: longest") << "notes" << QByteArray(100000, 'n') << "";
        QTest::newRow("tags: bad bytes") << "tags" << QByteArray("fp16,\xff") << "The run tags must be valid UTF-8 text.";
        QTest::newRow("tags: tab inside") << "tags" << QByteArray("a\tb") << "control characters";
        QTest::newRow("tags: 65 characters") << "tags" << QByteArray("ok,") + QByteArray(65, 't')
                                             << "characters long; a tag may have at most 64.";
        QTest::newRow("tags: 64 characters") << "tags" << QByteArray("ok,") + QByteArray(64, 't') << "";
        QByteArray many;
        for (int i = 0; i < 101; ++i) many += "t" + QByteArray::number(i) + ",";
        QTest::newRow("tags: 101 tags") << "tags" << many << "A run may have at most 100 tags; 101 were given.";
    }

    void textIsChecked() {
        QFETCH(QString, field);
        QFETCH(QByteArray, text);
        QFETCH(QString, expected);
        const std::string t = text.toStdString();
        const RunRow before = m_store->run(m_run);
        const QString error = error_of([&] {
            if (field == "name") m_store->rename(m_run, t);
            if (field == "notes") m_store->set_notes(m_run, t);
            if (field == "tags") m_store->set_tags(m_run, t);
        });
        const RunRow after = m_store->run(m_run);
        if (expected.isEmpty()) {
            QVERIFY2(error.isEmpty(), qPrintable(error));
            if (field == "name") QCOMPARE(after.name, t);
            if (field == "notes") QCOMPARE(after.notes, t);
            if (field == "tags") QCOMPARE(after.tags, t);
            m_store->rename(m_run, before.name);  // back to the values the refusals below compare with
            m_store->set_notes(m_run, before.notes);
            m_store->set_tags(m_run, before.tags);
        } else {
            QVERIFY2(error.contains(expected), qPrintable(error));
            QCOMPARE(error.count('.'), error.contains("...") ? 4 : 1);  // one sentence
            QCOMPARE(after.name, before.name);
            QCOMPARE(after.notes, before.notes);
            QCOMPARE(after.tags, before.tags);
        }
    }

    void recordingRefusesABadName() {
        const std::size_t runs = m_store->list_runs().size();
        const QString error = error_of([&] { m_store->start_run({"x\xff", "cpu", "test", "{}"}); });
        QCOMPARE(error, QString("The run name must be valid UTF-8 text."));
        const QString control = error_of([&] { m_store->start_run({"x\x1b]0;title\x07", "cpu", "test", "{}"}); });
        QVERIFY2(control.contains("must not contain control characters"), qPrintable(control));
        QCOMPARE(m_store->list_runs().size(), runs);  // nothing was inserted
    }

    void printableText_data() {
        QTest::addColumn<QByteArray>("text");
        QTest::addColumn<bool>("keepLineBreaks");
        QTest::addColumn<QByteArray>("shown");
        QTest::newRow("plain") << QByteArray("fp16 run") << false << QByteArray("fp16 run");
        QTest::newRow("unicode kept") << QByteArray("caf\xc3\xa9") << false << QByteArray("caf\xc3\xa9");
        QTest::newRow("escape") << QByteArray("a\x1b[31mred") << false << QByteArray("a\\x1b[31mred");
        QTest::newRow("line break") << QByteArray("a\nb\tc\rd") << false << QByteArray("a\\nb\\tc\\rd");
        QTest::newRow("line break kept") << QByteArray("a\nb\tc\rd") << true << QByteArray("a\nb\tc\\rd");
        QTest::newRow("DEL and C1") << QByteArray("\x7f\xc2\x9b") << false << QByteArray("\\x7f\\u009b");
        QTest::newRow("bad bytes") << QByteArray("bad\xff\xfe") << false << QByteArray("bad\\xff\\xfe");
    }

    void printableText() {
        QFETCH(QByteArray, text);
        QFETCH(bool, keepLineBreaks);
        QFETCH(QByteArray, shown);
        QCOMPARE(QByteArray::fromStdString(store::printable_text(text.toStdString(), keepLineBreaks)), shown);
    }
};

QTEST_GUILESS_MAIN(StoreText)
#include "tst_store_text.moc"
