// `mantissa --screenshot FILE.png --steps N --config FILE`: the executable, run as a person or a
// docs script would, writes a PNG of the whole window at the requested size and exits 0; a bad
// experiment file exits 2 with the reason on stderr. Without a display, help and version still
// answer and the window is refused with a sentence, not Qt's abort. `--at STEP:...` changes land at
// their steps exactly, read back from the run store, even on a run fast enough to finish between
// two of the window's refreshes. `--during` pictures a run at exactly its N steps and stops it
// there. A lesson's picture records only the reference it draws.
#include <QtTest>

#include <QImage>
#include <QProcess>

#include "store/run_store.h"
#include "config/telemetry.h"

class TestScreenshot : public QObject {
    Q_OBJECT
private:
    QTemporaryDir m_dir;

    // headless: no display at all (no DISPLAY, WAYLAND_DISPLAY or QT_QPA_PLATFORM), as over ssh.
    int runMantissa(const QStringList& args, QString* stderrText, bool headless = false,
                    QString* stdoutText = nullptr) {
        QProcess p;
        QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
        if (headless) {
            for (const char* name : {"QT_QPA_PLATFORM", "DISPLAY", "WAYLAND_DISPLAY"})
                env.remove(QString::fromLatin1(name));
        } else {
            env.insert(QStringLiteral("QT_QPA_PLATFORM"), QStringLiteral("offscreen"));
        }
        env.insert(QStringLiteral("XDG_DATA_HOME"), m_dir.filePath(QStringLiteral("data")));
        env.insert(QStringLiteral("XDG_CONFIG_HOME"), m_dir.filePath(QStringLiteral("config")));
        p.setProcessEnvironment(env);
        p.start(QStringLiteral(MANTISSA_GUI_EXE), args);
        if (!p.waitForFinished(120000)) {
            p.kill();
            return -1;
        }
        *stderrText = QString::fromLocal8Bit(p.readAllStandardError());
        if (stdoutText) *stdoutText = QString::fromLocal8Bit(p.readAllStandardOutput());
        return p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -1;
    }

    QString writeFile(const QString& name, const QByteArray& text) {
        const QString path = m_dir.filePath(name);
        QFile f(path);
        if (!f.open(QIODevice::WriteOnly)) return {};
        f.write(text);
        return path;
    }

private slots:
    void initTestCase() { QVERIFY(m_dir.isValid()); }

    void writesAPngOfTheWindow() {
        const QString config = writeFile(QStringLiteral("spirals.json"),
                                         R"({"name": "shot", "dataset": {"kind": "spirals", "samples": 400},
                                             "model": {"hidden": [16]}, "train": {"batch_size": 32, "eval_every": 10},
                                             "backend": "cpu"})");
        const QString png = m_dir.filePath(QStringLiteral("shot.png"));
        QString err;
        const int code = runMantissa({QStringLiteral("--screenshot"), png, QStringLiteral("--steps"), QStringLiteral("25"),
                                      QStringLiteral("--config"), config, QStringLiteral("--size"),
                                      QStringLiteral("1000x700")},
                                     &err);
        QVERIFY2(code == 0, qPrintable(err));
        QImage image(png);
        QVERIFY(!image.isNull());
        QCOMPARE(image.size(), QSize(1000, 700));
        QVERIFY2(err.contains(QStringLiteral("25 steps")), qPrintable(err));
        // The run was recorded in the default store ($XDG_DATA_HOME/mantissa/runs.sqlite).
        QVERIFY(QFile::exists(m_dir.filePath(QStringLiteral("data/mantissa/runs.sqlite"))));
    }

    // 60 steps of a tiny network take a few milliseconds: the window sees the run in one or two
    // refreshes, so only a pause at each step can put the changes there.
    void atLandsAtItsStepOnAFastRun() {
        const QString config = writeFile(QStringLiteral("fast.json"),
                                         R"({"name": "fast", "dataset": {"kind": "spirals", "samples": 400},
                                             "model": {"hidden": [16]}, "train": {"batch_size": 32, "eval_every": 0},
                                             "backend": "cpu"})");
        const QString db = m_dir.filePath(QStringLiteral("at.sqlite"));
        QString err;
        const int code = runMantissa({QStringLiteral("--screenshot"), m_dir.filePath(QStringLiteral("at.png")),
                                      QStringLiteral("--steps"), QStringLiteral("60"), QStringLiteral("--config"), config,
                                      QStringLiteral("--db"), db, QStringLiteral("--size"), QStringLiteral("800x600"),
                                      // out of order on purpose: the job sorts them
                                      QStringLiteral("--at"), QStringLiteral("30:inject=fc2"),
                                      QStringLiteral("--at"), QStringLiteral("10:train.lr=0.01"),
                                      QStringLiteral("--at"), QStringLiteral("20:precision.layers.fc1=fp16"),
                                      QStringLiteral("--at"), QStringLiteral("40:precision.loss_scaling.mode=off"),
                                      QStringLiteral("--at"), QStringLiteral("40:precision.layers.fc2=bf16")},
                                     &err);
        QVERIFY2(code == 0, qPrintable(err));

        mantissa::RunStore store(db.toStdString(), true);
        const auto runs = store.list_runs();
        QCOMPARE(runs.size(), std::size_t{1});
        QStringList changes;  // "STEP kind": the setting changes and notices (the injection's)
        std::int64_t overflowStep = -1;
        for (const mantissa::Event& e : store.events(runs.front().id)) {
            if (e.kind == mantissa::EventKind::setting_change || e.kind == mantissa::EventKind::notice)
                changes << QStringLiteral("%1 %2").arg(e.step).arg(QString::fromLatin1(mantissa::event_kind_name(e.kind)));
            if (e.kind == mantissa::EventKind::overflow && overflowStep < 0) overflowStep = e.step;
        }
        const QStringList expected{QStringLiteral("10 setting_change"), QStringLiteral("20 setting_change"),
                                   QStringLiteral("30 notice"), QStringLiteral("40 setting_change"),
                                   QStringLiteral("40 setting_change")};
        QCOMPARE(changes, expected);
        QCOMPARE(overflowStep, std::int64_t{30});  // the injected inf overflows the step it was put in
        QCOMPARE(store.steps(runs.front().id).size(), std::size_t{60});  // the run went on to its end
    }

    // --during: the picture is of the run at exactly N steps, however fast it trains (this one
    // takes thousands of steps a second, far more than the window draws between two refreshes):
    // the count printed is the status bar's in the picture, and the run, stopped after the grab,
    // recorded N steps and no more. With --at the changes still land at their steps before it.
    void duringPicturesTheRunAtItsStep_data() {
        QTest::addColumn<int>("steps");
        QTest::addColumn<QStringList>("at");
        QTest::newRow("fast run") << 50 << QStringList{};
        QTest::newRow("fast run, --at before")
            << 60 << QStringList{QStringLiteral("20:train.lr=0.01"), QStringLiteral("59:inject=fc2")};
    }
    void duringPicturesTheRunAtItsStep() {
        QFETCH(int, steps);
        QFETCH(QStringList, at);
        const QString config = writeFile(QStringLiteral("during.json"),
                                         R"({"name": "during", "dataset": {"kind": "spirals", "samples": 400},
                                             "model": {"hidden": [16]},
                                             "train": {"batch_size": 32, "steps": 100000, "eval_every": 0},
                                             "backend": "cpu"})");
        const QString db = m_dir.filePath(QStringLiteral("during-%1.sqlite").arg(steps));
        QStringList args{QStringLiteral("--screenshot"), m_dir.filePath(QStringLiteral("during.png")),
                         QStringLiteral("--steps"), QString::number(steps), QStringLiteral("--during"),
                         QStringLiteral("--config"), config, QStringLiteral("--db"), db,
                         QStringLiteral("--size"), QStringLiteral("1024x700")};
        for (const QString& a : at) args << QStringLiteral("--at") << a;
        QString err;
        const int code = runMantissa(args, &err);
        QVERIFY2(code == 0, qPrintable(err));
        QVERIFY2(err.contains(QStringLiteral(", %1 steps)").arg(steps)), qPrintable(err));

        mantissa::RunStore store(db.toStdString(), true);
        const auto runs = store.list_runs();
        QCOMPARE(runs.size(), std::size_t{1});
        QCOMPARE(runs.front().status, mantissa::RunStatus::stopped);
        const auto recorded = store.steps(runs.front().id);
        QCOMPARE(recorded.size(), static_cast<std::size_t>(steps));
        QCOMPARE(recorded.back().step, std::int64_t{steps - 1});
        QStringList changes;  // "STEP kind", as atLandsAtItsStepOnAFastRun reads them
        for (const mantissa::Event& e : store.events(runs.front().id))
            if (e.kind == mantissa::EventKind::setting_change || e.kind == mantissa::EventKind::notice ||
                e.kind == mantissa::EventKind::paused)
                changes << QStringLiteral("%1 %2").arg(e.step).arg(QString::fromLatin1(mantissa::event_kind_name(e.kind)));
        QStringList expected;
        if (!at.isEmpty()) expected = {QStringLiteral("20 setting_change"), QStringLiteral("59 notice")};
        QCOMPARE(changes, expected);  // and no pause logged: the hold is the script's
    }

    // A lesson's picture records the reference it compares with, at the picture's length, and no
    // other: not one started for the file's own length and abandoned when --steps changed it.
    void lessonLeavesOnlyTheReferenceItUsed() {
        const QString config = writeFile(QStringLiteral("lesson.json"),
                                         R"({"name": "shot-lesson",
                                             "lesson": {"title": "A lesson", "pace": 2,
                                                        "reference": {"name": "FP32", "set": ["precision.autocast=off"]}},
                                             "dataset": {"kind": "blobs", "samples": 2000},
                                             "model": {"hidden": [16]},
                                             "train": {"batch_size": 64, "steps": 100000, "eval_every": 0},
                                             "precision": {"autocast": "fp16"}, "backend": "cpu"})");
        const QString db = m_dir.filePath(QStringLiteral("lesson.sqlite"));
        QString err;
        const int code = runMantissa({QStringLiteral("--screenshot"), m_dir.filePath(QStringLiteral("lesson.png")),
                                      QStringLiteral("--steps"), QStringLiteral("15"), QStringLiteral("--config"), config,
                                      QStringLiteral("--db"), db, QStringLiteral("--size"), QStringLiteral("1024x700")},
                                     &err);
        QVERIFY2(code == 0, qPrintable(err));
        mantissa::RunStore store(db.toStdString(), true);
        QStringList runs;  // "NAME STATUS STEPS"
        for (const mantissa::RunRow& r : store.list_runs())
            runs << QStringLiteral("%1 %2 %3")
                        .arg(QString::fromStdString(r.name), QString::fromLatin1(mantissa::run_status_name(r.status)))
                        .arg(store.steps(r.id).size());
        runs.sort();
        const QStringList expected{QStringLiteral("shot-lesson completed 15"),
                                   QStringLiteral("shot-lesson-reference-fp32 completed 15")};
        QCOMPARE(runs, expected);
    }

    void badExperimentFileExits2() {
        const QString config = writeFile(QStringLiteral("bad.json"), R"({"model": {"hidden": "wide"}})");
        QString err;
        const int code = runMantissa({QStringLiteral("--screenshot"), m_dir.filePath(QStringLiteral("x.png")),
                                      QStringLiteral("--config"), config},
                                     &err);
        QCOMPARE(code, 2);
        QVERIFY2(err.contains(QStringLiteral("model.hidden")), qPrintable(err));
        QVERIFY(!QFile::exists(m_dir.filePath(QStringLiteral("x.png"))));
    }

    // Without a display Qt would abort; what shows no window runs offscreen, and the window itself
    // is refused with one sentence.
    void withoutADisplay_data() {
        QTest::addColumn<QStringList>("args");
        QTest::addColumn<int>("exitCode");
        QTest::addColumn<QString>("says");
        QTest::newRow("--version") << QStringList{QStringLiteral("--version")} << 0
                                   << QStringLiteral(MANTISSA_VERSION);
        QTest::newRow("--help") << QStringList{QStringLiteral("--help")} << 0 << QStringLiteral("--screenshot");
        QTest::newRow("the window") << QStringList{} << 1 << QStringLiteral("no display");
    }
    void withoutADisplay() {
        QFETCH(QStringList, args);
        QFETCH(int, exitCode);
        QFETCH(QString, says);
        QString err, out;
        QCOMPARE(runMantissa(args, &err, true, &out), exitCode);
        QVERIFY2((out + err).contains(says), qPrintable(out + err));
        if (exitCode != 0) QCOMPARE(err.count(QLatin1Char('\n')), 1);  // one sentence
    }
};

QTEST_GUILESS_MAIN(TestScreenshot)
#include "test_screenshot.moc"
