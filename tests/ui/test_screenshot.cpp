// `mantissa --screenshot FILE.png --steps N --config FILE`: the executable, run as a person or a
// docs script would, writes a PNG of the whole window at the requested size and exits 0; a bad
// experiment file exits 2 with the reason on stderr. Without a display, help and version still
// answer and the window is refused with a sentence, not Qt's abort.
#include <QtTest>

#include <QImage>
#include <QProcess>

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
