// Comparing recorded runs and exporting them: two runs overlaid (both series, one colour each,
// the legend names them), exactly the differing configuration keys in the table (precision first,
// the lesson last, every run's column on screen), each chart's title and read-out with its unit,
// the step/time toggle and the shared smoothing, nine runs refused; each export writes a valid file (CSV parses
// to the table's rows, JSON parses, the experiment file re-parses to the recorded experiment); an
// export aimed at a checkpoint, a named pipe or the store is refused with mantissa-cli's sentence
// and leaves it as it was, and one aimed at a symbolic link writes the file it names.
// screenshots() builds the browser and the comparison of docs/screenshots from real runs in every
// run of the suite; with MANTISSA_SCREENSHOT_DIR set it also writes browser.png and compare.png there.
#include <QtTest>

#include <QHeaderView>
#include <QLabel>
#include <QRegularExpression>
#include <QStyle>
#include <QTableWidget>

#include <algorithm>
#include <fstream>
#include <set>
#include <sstream>

#include "charts/chart_view.h"
#include "charts/charts_panel.h"
#include "history/compare_view.h"
#include "history/config_summary.h"
#include "history/run_browser.h"
#include "history/run_export.h"
#include "history/run_table_model.h"
#include "history/run_viewer.h"
#include "test_history_fixture.h"
#include "checkpoint_edits.h"

#include <sys/stat.h>

using namespace mantissa;
using namespace mantissa::ui;
using namespace history_test;

namespace {

// Splits RFC 4180 CSV into records of fields (quoted fields may hold commas, quotes, line breaks).
std::vector<std::vector<std::string>> parseCsv(const std::string& text, bool* ok) {
    std::vector<std::vector<std::string>> rows;
    std::vector<std::string> row;
    std::string field;
    bool quoted = false, any = false;
    *ok = true;
    for (std::size_t i = 0; i < text.size(); ++i) {
        const char c = text[i];
        if (quoted) {
            if (c == '"' && i + 1 < text.size() && text[i + 1] == '"') field += '"', ++i;
            else if (c == '"') quoted = false;
            else field += c;
        } else if (c == '"') {
            quoted = true;
        } else if (c == ',') {
            row.push_back(field), field.clear();
        } else if (c == '\r' && i + 1 < text.size() && text[i + 1] == '\n') {
            row.push_back(field), field.clear();
            rows.push_back(row), row.clear();
            ++i;
        } else if (c == '\n') {
            *ok = false;  // the store writes CRLF
        } else {
            field += c;
        }
        any = true;
    }
    if (quoted) *ok = false;
    if (any && (!field.empty() || !row.empty())) row.push_back(field), rows.push_back(row);
    return rows;
}

std::string readAll(const QString& path) {
    std::ifstream in(QFile::encodeName(path).toStdString(), std::ios::binary);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
}

}  // namespace

class TestHistoryCompare : public QObject {
    Q_OBJECT
private:
    QTemporaryDir m_dir;
    std::string m_path;
    Experiment m_fp32, m_fp16;
    std::int64_t m_a = 0, m_b = 0, m_twinA = 0, m_twinB = 0;
    std::shared_ptr<RunStore> m_store;

private slots:
    void initTestCase() {
        QVERIFY(m_dir.isValid());
        m_path = m_dir.filePath(QStringLiteral("runs.sqlite")).toStdString();
        m_fp32 = spirals("cmp-fp32", 30);
        m_fp16 = spirals("cmp-fp16", 30);
        m_fp16.precision.autocast = Autocast::fp16;
        m_fp16.precision.loss_scaling.mode = LossScalingMode::off;
        m_fp16.precision.layers["fc3"] = LayerPrecision::fp32;
        m_a = trainRun(m_path, m_fp32);
        m_b = trainRun(m_path, m_fp16);
        RunStore store(m_path);
        const std::string same = syntheticConfig("twin");  // identical configurations
        syntheticRun(store, "twin-a", 20, RunStatus::completed, same);
        syntheticRun(store, "twin-b", 15, RunStatus::completed, same);
        m_twinA = store.resolve("twin-a");
        m_twinB = store.resolve("twin-b");
        m_store = std::make_shared<RunStore>(m_path);
    }

    void flattenAndDiffer() {
        const auto a = flattenConfig(R"({"x": 1, "p": {"layers": {}, "mode": "off"}, "h": [1, 2]})");
        const auto b = flattenConfig(R"({"x": 1, "p": {"layers": {"fc3": "fp32"}, "mode": "off"}, "h": [1, 3]})");
        QCOMPARE(a.size(), std::size_t{3});  // x, p.mode, h: the empty object adds no key
        QCOMPARE(a.at("h"), std::string("[1,2]"));
        QCOMPARE(differingKeys({a, b}), (std::vector<std::string>{"h", "p.layers.fc3"}));
        QCOMPARE(differingKeys({a, a, a}), std::vector<std::string>{});
        QVERIFY(flattenConfig("[1]").empty());
        // A whole number reads as one, as everywhere else the window shows it: 65536, not 65536.0.
        const auto numbers = flattenConfig(R"({"scale": 65536.0, "batch": 1024.0, "lr": 0.5, "steps": 3})");
        QCOMPARE(numbers.at("scale"), std::string("65536"));
        QCOMPARE(numbers.at("batch"), std::string("1024"));
        QCOMPARE(numbers.at("lr"), std::string("0.5"));
        QCOMPARE(numbers.at("steps"), std::string("3"));

        // A layer's setting is one key whatever its form: a name, or an object of its matmuls.
        const auto named = flattenConfig(R"({"precision": {"layers": {"fc1": "fp16"}}})");
        const auto gemms = flattenConfig(
            R"({"precision": {"layers": {"fc1": {"forward": "fp16", "dgrad": "fp16", "wgrad": "fp16"}}}})");
        const auto fp16Sums = flattenConfig(
            R"({"precision": {"layers": {"fc1": {"forward": "fp16", "dgrad": "fp16", "wgrad": "fp16", "accumulate": "fp16"}}}})");
        QCOMPARE(named, gemms);
        QCOMPARE(fp16Sums.at("precision.layers.fc1"), std::string(R"("fp16, accumulate fp16")"));
        QCOMPARE(differingKeys({named, fp16Sums}), std::vector<std::string>{"precision.layers.fc1"});
        QCOMPARE(flattenConfig(R"({"precision": {"layers": {"fc1": {"wgrad": "bf16"}}}})").at("precision.layers.fc1"),
                 std::string(R"("forward auto, dgrad auto, wgrad bf16")"));

        // What decides the numbers first, the lesson's texts last.
        const auto c =
            flattenConfig(R"({"lesson": {"text": "a"}, "name": "x", "train": {"lr": 1}, "model": {"hidden": [1]},
                                         "precision": {"autocast": "off"}, "dataset": {"kind": "a"}, "backend": {"kind": "cpu"}})");
        const auto d =
            flattenConfig(R"({"lesson": {"text": "b"}, "name": "y", "train": {"lr": 2}, "model": {"hidden": [2]},
                                         "precision": {"autocast": "fp16"}, "dataset": {"kind": "b"}, "backend": {"kind": "cuda"}})");
        QCOMPARE(differingKeys({c, d}),
                 (std::vector<std::string>{"precision.autocast", "model.hidden", "train.lr", "dataset.kind",
                                           "backend.kind", "name", "lesson.text"}));
    }

    void comparingTwoRunsOverlaysBoth() {
        CompareView view(m_store);
        view.resize(1200, 800);
        view.show();
        QCOMPARE(view.setRuns({m_a, m_b}), QString());
        QCOMPARE(view.curves().size(), std::size_t{2});
        const auto stepsA = m_store->steps(m_a);
        const auto stepsB = m_store->steps(m_b);
        const auto& ca = view.curves()[0];
        const auto& cb = view.curves()[1];
        QCOMPARE(ca.id, m_a);
        QCOMPARE(ca.name, QStringLiteral("cmp-fp32"));
        QCOMPARE(ca.loss.size(), stepsA.size());
        QCOMPARE(cb.loss.size(), stepsB.size());
        for (std::size_t i = 0; i < stepsB.size(); ++i) {
            QCOMPARE(cb.loss.x(i), static_cast<double>(stepsB[i].step));
            QCOMPARE(cb.loss.y(i), static_cast<double>(static_cast<float>(stepsB[i].loss)));
            QCOMPARE(cb.lossScale.y(i), static_cast<double>(static_cast<float>(stepsB[i].loss_scale)));
        }
        QVERIFY(ca.color != cb.color);
        QCOMPARE(ca.accuracy.size(), m_store->evals(m_a).size());
        // Underflow: the mean over the layers at each step.
        const auto layers = m_store->layer_steps(m_b);
        double sum0 = 0;
        int n0 = 0;
        for (const auto& l : layers)
            if (l.step == layers.front().step) sum0 += l.frac_underflow, ++n0;
        QCOMPARE(cb.underflow.y(0), static_cast<double>(static_cast<float>(sum0 / n0)));
        view.setUnderflowLayer(1);
        for (const auto& l : layers)
            if (l.step == layers.front().step && l.layer == 1)
                QCOMPARE(view.curves()[1].underflow.y(0), static_cast<double>(static_cast<float>(l.frac_underflow)));

        // Both runs drawn on every chart, named in the legend.
        view.redrawNow();
        QCOMPARE(view.lossChart()->graphCount(), 4);  // raw and smoothed per run
        QCOMPARE(view.scaleChart()->graphCount(), 2);
        QCOMPARE(view.accuracyChart()->graphCount(), 2);
        QCOMPARE(view.underflowChart()->graphCount(), 2);
        QVERIFY(view.lossChart()->drawnPoints() > 0);
        QVERIFY(view.legendLabel()->text().contains(QStringLiteral("cmp-fp32")));
        QVERIFY(view.legendLabel()->text().contains(QStringLiteral("cmp-fp16")));
        QVERIFY(view.legendLabel()->text().contains(ca.color.name()));

        // Exactly the keys that differ.
        QCOMPARE(view.differingKeys(), (std::vector<std::string>{"precision.autocast", "precision.layers.fc3",
                                                                 "precision.loss_scaling.mode", "name"}));
        QVERIFY2(view.differenceNote().startsWith(QStringLiteral("4 keys differ;")), qPrintable(view.differenceNote()));
        QTableWidget* t = view.differenceTable();
        QCOMPARE(t->rowCount(), 4);
        QCOMPARE(t->columnCount(), 2);
        QCOMPARE(t->verticalHeaderItem(0)->text(), QStringLiteral("precision.autocast"));
        QCOMPARE(t->item(0, 0)->text(), QStringLiteral("off"));
        QCOMPARE(t->item(0, 1)->text(), QStringLiteral("fp16"));
        QCOMPARE(t->item(1, 0)->text(), QStringLiteral("(absent)"));
        QCOMPARE(t->item(1, 1)->text(), QStringLiteral("fp32"));
        QCOMPARE(t->horizontalHeaderItem(0)->text(), QStringLiteral("cmp-fp32"));
        QCOMPARE(t->horizontalHeaderItem(1)->text(), QStringLiteral("cmp-fp16"));
    }

    // Each chart says what it shows and in what unit, above its plot, however short the layout;
    // its read-out gives every run's value with the unit and the same decimals.
    void chartsNameTheirUnits() {
        CompareView view(m_store);
        view.resize(1100, 560);  // short charts: the axis labels do not all fit
        view.show();
        QVERIFY(QTest::qWaitForWindowExposed(&view));
        QCOMPARE(view.setRuns({m_a, m_b}), QString());
        view.redrawNow();
        const auto titleShown = [](ChartView* c) {
            for (QCPLayoutElement* e : c->plotLayout()->elements(true))
                if (auto* text = qobject_cast<QCPTextElement*>(e); text && !text->text().isEmpty()) return text->text();
            return QString();
        };
        const std::vector<std::pair<ChartView*, QString>> units = {
            {view.lossChart(), QStringLiteral("loss")},
            {view.scaleChart(), QStringLiteral("loss scale")},
            {view.accuracyChart(), QStringLiteral("(%)")},
            {view.throughputChart(), QStringLiteral("(samples/s)")},
            {view.underflowChart(), QStringLiteral("(% of values")}};
        for (const auto& [chart, unit] : units) {
            QVERIFY2(chart->noteText().contains(unit), qPrintable(chart->noteText()));
            QTRY_COMPARE(titleShown(chart), chart->noteText());
            for (const QString& form : chart->labelForms(chart->yAxis))  // never a bare unit
                QVERIFY2(form.contains(QRegularExpression(QStringLiteral("[a-z]{3}"))), qPrintable(form));
        }
        view.setUnderflowLayer(1);
        QVERIFY(view.underflowChart()->noteText().endsWith(QStringLiteral(": fc2")));

        // The read-outs at an evaluation's step: "NAME 81.30 %" beside "NAME 81.04 %".
        const double step = m_store->evals(m_a).front().step;
        const auto parts = [&](ChartView* c) {
            QStringList p = c->readoutText(step).split(QStringLiteral("   "));
            p.removeFirst();  // "step N"
            return p;
        };
        const auto decimalsOf = [](const QString& number) {  // "81.30": 2, "3.512e-04": 3
            const QString mantissa = number.section(QLatin1Char('e'), 0, 0);
            const qsizetype dot = mantissa.indexOf(QLatin1Char('.'));
            return dot < 0 ? 0 : mantissa.size() - dot - 1;
        };
        const QString number = QStringLiteral(R"((-?[0-9.]+(?:e[-+][0-9]+)?))");
        const QRegularExpression value(QStringLiteral(" %1(?: \\(raw %1\\))?(.*)$").arg(number));
        const std::vector<std::pair<ChartView*, QString>> shown = {
            {view.accuracyChart(), QStringLiteral(" %")},
            {view.throughputChart(), QStringLiteral(" samples/s")},
            {view.underflowChart(), QStringLiteral(" %")},
            {view.lossChart(), QString()}};
        for (const auto& [chart, unit] : shown) {
            const QStringList p = parts(chart);
            QCOMPARE(p.size(), 2);  // one part a run, its raw value inside it
            std::set<qsizetype> decimals;
            for (const QString& part : p) {
                const QRegularExpressionMatch m = value.match(part);
                QVERIFY2(m.hasMatch(), qPrintable(part));
                QCOMPARE(m.captured(3), unit);
                decimals.insert(decimalsOf(m.captured(1)));
                if (chart == view.throughputChart() || chart == view.lossChart()) {
                    QVERIFY2(!m.captured(2).isEmpty(), qPrintable(part));
                    decimals.insert(decimalsOf(m.captured(2)));
                }
            }
            QVERIFY2(decimals.size() == 1, qPrintable(p.join(QStringLiteral(" | "))));
        }
    }

    // The differences with a lesson: precision keys first and the lesson's texts last; every run's
    // column on screen, headed by its name, however long a value; a value on one line, whole in its
    // tooltip.
    void differencesReadWithALesson() {
        QTemporaryDir dir;
        const std::string path = dir.filePath(QStringLiteral("runs.sqlite")).toStdString();
        Experiment plain = spirals("diff-plain", 5);
        Experiment lesson = spirals("diff-lesson-with-a-long-name-reference-fp32-accumulation", 5);
        lesson.precision.autocast = Autocast::fp16;
        lesson.lesson.title = "A lesson";
        QString text;
        for (int i = 0; i < 40; ++i) text += QStringLiteral("A sentence about accumulation, number %1. ").arg(i);
        text += QStringLiteral("\nThe last line.");
        lesson.lesson.text = text.toStdString();
        std::int64_t a = 0, b = 0;
        {
            RunStore store(path);
            syntheticRun(store, plain.name, 5, RunStatus::completed, experiment_to_json(plain).dump());
            syntheticRun(store, lesson.name, 5, RunStatus::completed, experiment_to_json(lesson).dump());
            a = store.resolve(plain.name);
            b = store.resolve(lesson.name);
        }
        CompareView view(std::make_shared<RunStore>(path, true));
        view.resize(900, 700);
        view.show();
        QVERIFY(QTest::qWaitForWindowExposed(&view));
        QCOMPARE(view.setRuns({a, b}), QString());
        const auto& keys = view.differingKeys();
        QCOMPARE(keys.front(), std::string("precision.autocast"));
        QVERIFY(std::is_sorted(keys.begin(), keys.end(), [](const std::string& x, const std::string& y) {
            return x.starts_with("lesson.") < y.starts_with("lesson.");
        }));
        QCOMPARE(keys.back().substr(0, 7), std::string("lesson."));

        QTableWidget* t = view.differenceTable();
        QTRY_VERIFY(t->isVisible());
        QHeaderView* header = t->horizontalHeader();
        for (int col = 0; col < 2; ++col) {
            // Named, in the middle elided to the column where too long (the header clips, not elides).
            const QString name = QString::fromStdString(col == 0 ? plain.name : lesson.name);
            QTableWidgetItem* item = t->horizontalHeaderItem(col);
            QCOMPARE(item->data(Qt::UserRole).toString(), name);
            QVERIFY(item->toolTip().contains(name));
            QTRY_VERIFY2(header->fontMetrics().horizontalAdvance(item->text()) < header->sectionSize(col),
                         qPrintable(item->text()));
            const QString shown = item->text();
            const QChar ellipsis(0x2026);
            QVERIFY2(shown == name ||
                         (name.startsWith(shown.section(ellipsis, 0, 0)) && name.endsWith(shown.section(ellipsis, 1))),
                     qPrintable(shown));
            QVERIFY2(header->sectionViewportPosition(col) + header->sectionSize(col) <= t->viewport()->width(),
                     qPrintable(QStringLiteral("column %1 ends at %2 of %3")
                                    .arg(col)
                                    .arg(header->sectionViewportPosition(col) + header->sectionSize(col))
                                    .arg(t->viewport()->width())));
        }
        const int row = static_cast<int>(std::find(keys.begin(), keys.end(), "lesson.text") - keys.begin());
        QVERIFY(row < t->rowCount());
        QCOMPARE(t->item(row, 0)->text(), QStringLiteral("(empty)"));
        QVERIFY(!t->item(row, 1)->text().contains(QLatin1Char('\n')));
        QVERIFY(t->item(row, 1)->toolTip().contains(QStringLiteral("number 39.")));
        QVERIFY(t->item(row, 1)->toolTip().contains(QStringLiteral("The last line.")));
    }

    void alignsByTimeAndSmoothsAll() {
        CompareView view(m_store);
        QCOMPARE(view.setRuns({m_a, m_b}), QString());
        const auto stepsA = m_store->steps(m_a);
        view.setXAxis(CompareView::XAxis::time);
        QCOMPARE(view.curves()[0].loss.x(5), stepsA[5].time_s);
        QCOMPARE(view.underflowChart()->xAxis->label(), QStringLiteral("elapsed time (s)"));
        view.setXAxis(CompareView::XAxis::step);
        QCOMPARE(view.curves()[0].loss.x(5), 5.0);
        view.setLogLoss(true);
        QVERIFY(view.lossChart()->logarithmic());
        QVERIFY(view.scaleChart()->logarithmic());  // the scale is always on log2
        view.setSmoothingWeight(0);
        for (const auto& c : view.curves())
            for (std::size_t i = 0; i < c.loss.size(); ++i) QCOMPARE(c.lossSmoothed.y(i), c.loss.y(i));
        view.setSmoothingWeight(0.9);
        for (const auto& c : view.curves()) {
            QCOMPARE(c.lossSmoothed.y(0), c.loss.y(0));  // debiased: the first point is the raw one
            QVERIFY(c.lossSmoothed.y(10) != c.loss.y(10));
        }
    }

    void identicalConfigurationsSaySo() {
        CompareView view(m_store);
        QCOMPARE(view.setRuns({m_twinA, m_twinB}), QString());
        QVERIFY(view.differingKeys().empty());
        QCOMPARE(view.differenceTable()->rowCount(), 0);
        QVERIFY(view.differenceNote().contains(QStringLiteral("No configuration key differs")));
    }

    // A run still recording (by mantissa-cli, or this process) is followed: its new steps,
    // layer rows and evaluations are drawn as they are committed, until it finishes.
    void followsARunStillRecording() {
        RunStore store(m_path);
        auto live = syntheticRun(store, "cmp-live", 12, RunStatus::running);
        const std::int64_t id = live->run_id();
        QTRY_COMPARE_WITH_TIMEOUT(m_store->steps(id).size(), std::size_t{12}, 5000);
        CompareView view(m_store);
        view.setFollowInterval(20);
        QCOMPARE(view.setRuns({m_twinA, id}), QString());
        QVERIFY(view.following());
        QCOMPARE(view.curves()[1].loss.size(), std::size_t{12});
        QCOMPARE(view.curves()[1].accuracy.size(), std::size_t{1});  // the evaluation at step 9

        // The whole run shown: the x range grows with it. Zoomed in: the zoom stays.
        feed(*live, 12, 20);
        QTRY_COMPARE_WITH_TIMEOUT(view.curves()[1].loss.size(), std::size_t{20}, 5000);
        QCOMPARE(view.lossChart()->xAxis->range().upper, 19.0);  // twin-a's last step, too
        view.lossChart()->setXRange(QCPRange(2, 6));
        feed(*live, 20, 30);
        QTRY_COMPARE_WITH_TIMEOUT(view.curves()[1].loss.size(), std::size_t{30}, 5000);
        QCOMPARE(view.lossChart()->xAxis->range().upper, 6.0);
        QCOMPARE(view.underflowChart()->xAxis->range().lower, 2.0);
        QTRY_COMPARE_WITH_TIMEOUT(view.curves()[1].accuracy.size(), std::size_t{3}, 5000);  // 9, 19, 29
        QCOMPARE(view.curves()[1].underflow.size(), std::size_t{30});
        QCOMPARE(view.curves()[1].loss.lastX(), 29.0);
        QCOMPARE(view.curves()[0].loss.size(), std::size_t{20});  // the finished run as it was
        live->finish(RunStatus::completed);
        QTRY_VERIFY_WITH_TIMEOUT(!view.following(), 5000);
        QCOMPARE(view.curves()[1].loss.size(), std::size_t{30});

        // Only finished runs: nothing to follow.
        QCOMPARE(view.setRuns({m_twinA, m_twinB}), QString());
        QVERIFY(!view.following());
    }

    void compareRefusesNineAndOne() {
        RunBrowser b;
        QVERIFY(b.openStore(QString::fromStdString(m_path)));
        std::vector<std::int64_t> nine;
        for (int i = 0; i < 9; ++i) nine.push_back(i % 2 ? m_a : m_b);
        QSignalSpy requested(&b, &RunBrowser::compareRequested);
        QVERIFY(!b.compareRuns(nine));
        QVERIFY(b.lastError().contains(QStringLiteral("at most 8")));
        QVERIFY(!b.compareRuns({m_a}));
        QVERIFY(b.lastError().contains(QStringLiteral("at least two")));
        QCOMPARE(requested.count(), 0);
        CompareView* v = b.compareRuns({m_a, m_b, m_twinA});
        QVERIFY(v);
        QCOMPARE(v->curves().size(), std::size_t{3});
        QCOMPARE(requested.count(), 1);
        QCOMPARE(requested.at(0).at(0).value<QList<qint64>>(), (QList<qint64>{m_a, m_b, m_twinA}));
        b.selectRuns({m_a, m_b});
        QVERIFY(b.compareAction()->isEnabled());
        b.selectRuns({m_a});
        QVERIFY(!b.compareAction()->isEnabled());
    }

    void exportsTables_data() {
        QTest::addColumn<QString>("table");
        QTest::addColumn<bool>("json");
        for (const QString& t : exportTableNames()) {
            QTest::newRow(qPrintable(t + QStringLiteral(" csv"))) << t << false;
            QTest::newRow(qPrintable(t + QStringLiteral(" json"))) << t << true;
        }
    }
    void exportsTables() {
        QFETCH(QString, table);
        QFETCH(bool, json);
        std::size_t expected = 0;
        if (table == QLatin1String("steps")) expected = m_store->steps(m_b).size();
        else if (table == QLatin1String("layer_steps")) expected = m_store->layer_steps(m_b).size();
        else if (table == QLatin1String("evals")) expected = m_store->evals(m_b).size();
        else if (table == QLatin1String("layers")) expected = m_store->layers(m_b).size();
        else if (table == QLatin1String("op_steps")) expected = m_store->op_steps(m_b).size();
        else if (table == QLatin1String("what_if_steps")) expected = m_store->what_if_steps(m_b).size();
        else if (table == QLatin1String("block_scale_steps")) expected = m_store->block_scale_steps(m_b).size();
        else if (table == QLatin1String("checkpoints")) expected = m_store->checkpoints(m_b).size();
        else expected = m_store->events(m_b).size();
        // An MLP has no op statistics, this fixture no what-if, block-scale or checkpoint rows:
        // those exports are the header (or []) alone.
        const bool may_be_empty = table == QLatin1String("op_steps") || table == QLatin1String("what_if_steps") ||
                                  table == QLatin1String("block_scale_steps") || table == QLatin1String("checkpoints");
        QVERIFY(expected > 0 || may_be_empty);
        const QString path = m_dir.filePath(QStringLiteral("export-%1.%2").arg(table, json ? "json" : "csv"));
        RunBrowser b;
        QVERIFY(b.openStore(QString::fromStdString(m_path)));
        const ExportChoice choice{ExportChoice::tableFile, table, json ? RunStore::ExportFormat::json : RunStore::ExportFormat::csv};
        QCOMPARE(b.exportRun(m_b, choice, path), QString());
        QVERIFY(!QFile::exists(path + QStringLiteral(".partial")));
        const std::string text = readAll(path);
        // The same bytes as the CLI's code writes.
        std::ostringstream direct;
        m_store->export_table(m_b, table.toStdString(), choice.format, direct);
        QCOMPARE(text, direct.str());
        if (json) {
            const auto j = nlohmann::json::parse(text);
            QVERIFY(j.is_array());
            QCOMPARE(j.size(), expected);
            if (expected > 0) QVERIFY(j.front().contains(table == QLatin1String("layers") ? "layer" : "step"));
        } else {
            bool ok = false;
            const auto rows = parseCsv(text, &ok);
            QVERIFY(ok);
            QCOMPARE(rows.size(), expected + 1);  // a header row
            QVERIFY(std::find(rows.front().begin(), rows.front().end(), table == QLatin1String("layers") ? "layer" : "step") !=
                    rows.front().end());
            for (const auto& r : rows) QCOMPARE(r.size(), rows.front().size());
        }
    }

    void exportsTheExperimentToRerunIt() {
        const QString path = m_dir.filePath(QStringLiteral("rerun.json"));
        RunViewer viewer(m_store, m_b);
        QVERIFY(viewer.load());
        QCOMPARE(viewer.exportTo({ExportChoice::experimentFile, {}, RunStore::ExportFormat::json}, path), QString());
        const Experiment back = load_experiment(QFile::encodeName(path).toStdString());
        QVERIFY(back == m_fp16);  // exactly what was trained
        QVERIFY(back == experiment_from_json(nlohmann::json::parse(m_store->run(m_b).config_json)));
        QVERIFY(readAll(path).find("\n  \"") != std::string::npos);  // pretty
        // A failure is a sentence, not an exception.
        const QString bad = viewer.exportTo({ExportChoice::experimentFile, {}, RunStore::ExportFormat::json},
                                            m_dir.filePath(QStringLiteral("no-such-dir/x.json")));
        QVERIFY(bad.contains(QStringLiteral("Cannot write")));
        QCOMPARE(suggestedExportName(m_store->run(m_b), {ExportChoice::tableFile, QStringLiteral("evals"), RunStore::ExportFormat::csv}),
                 QStringLiteral("cmp-fp16_evals.csv"));
    }

    // A table or experiment export never replaces a checkpoint, a named pipe or the store: each is
    // refused with store/output_guard.h's sentence (the file's name first) and left as it was.
    void exportRefusesFilesNoOutputMayReplace_data() {
        QTest::addColumn<QString>("kind");
        QTest::addColumn<bool>("experiment");
        QTest::addColumn<QString>("says");
        for (const bool experiment : {false, true}) {
            const char* what = experiment ? " (experiment)" : " (table)";
            QTest::newRow(qPrintable(QStringLiteral("checkpoint") + what))
                << "checkpoint" << experiment << "holds a Mantissa checkpoint, which is never overwritten";
            QTest::newRow(qPrintable(QStringLiteral("named pipe") + what))
                << "fifo" << experiment << "is a named pipe (FIFO)";
            QTest::newRow(qPrintable(QStringLiteral("the store") + what))
                << "store" << experiment << "is an SQLite database, which is never overwritten";
        }
    }
    void exportRefusesFilesNoOutputMayReplace() {
        QFETCH(QString, kind);
        QFETCH(bool, experiment);
        QFETCH(QString, says);
        QString target = m_dir.filePath(QStringLiteral("export-over-%1.json").arg(kind));
        QFile::remove(target);
        if (kind == QLatin1String("checkpoint")) {
            test::write_checkpoint_like_file(target.toStdString());
        } else if (kind == QLatin1String("fifo")) {
            QCOMPARE(::mkfifo(QFile::encodeName(target).constData(), 0600), 0);
        } else {
            target = QString::fromStdString(m_path);
        }
        const bool pipe = kind == QLatin1String("fifo");
        // The store is not read with a descriptor of our own (that drops SQLite's locks:
        // store/store_files.h); its rows are counted instead.
        const bool store = kind == QLatin1String("store");
        const std::string before = pipe || store ? std::string() : readAll(target);
        const auto steps = m_store->steps(m_b).size();

        const ExportChoice choice = experiment ? ExportChoice{ExportChoice::experimentFile, {}, RunStore::ExportFormat::json}
                                               : ExportChoice{ExportChoice::tableFile, QStringLiteral("steps"),
                                                              RunStore::ExportFormat::csv};
        RunViewer viewer(m_store, m_b);
        QVERIFY(viewer.load());
        const QString error = viewer.exportTo(choice, target);
        QVERIFY2(error.startsWith(target + QLatin1Char(' ')) && error.contains(says), qPrintable(error));
        struct stat st {};
        QCOMPARE(::lstat(QFile::encodeName(target).constData(), &st), 0);
        if (pipe)
            QVERIFY(S_ISFIFO(st.st_mode));
        else if (!store)
            QVERIFY(readAll(target) == before);
        QVERIFY(!QFile::exists(target + QStringLiteral(".partial")));
        QCOMPARE(m_store->steps(m_b).size(), steps);  // the store still reads
    }

    // An export aimed at a symbolic link replaces the file the link names; the link stays.
    void exportWritesThroughASymbolicLink() {
        const QString real = m_dir.filePath(QStringLiteral("linked-steps.csv"));
        const QString link = m_dir.filePath(QStringLiteral("steps-link.csv"));
        QVERIFY(test::link_to_older_file(real, link, "an older export\n"));
        RunViewer viewer(m_store, m_b);
        QVERIFY(viewer.load());
        QCOMPARE(viewer.exportTo({ExportChoice::tableFile, QStringLiteral("steps"), RunStore::ExportFormat::csv}, link),
                 QString());
        QVERIFY(QFileInfo(link).isSymLink());
        std::ostringstream direct;
        m_store->export_table(m_b, "steps", RunStore::ExportFormat::csv, direct);
        QCOMPARE(readAll(real), direct.str());
    }

    // The screenshots' scene for docs/ (real runs, a failed and a live one): it must build and draw;
    // the files are written only when MANTISSA_SCREENSHOT_DIR is set.
    void screenshots();
};

void TestHistoryCompare::screenshots() {
    const QString outDir = qEnvironmentVariable("MANTISSA_SCREENSHOT_DIR");
    const auto keep = [&](QWidget* w, const QString& name) {
        const QPixmap shot = w->grab();
        QVERIFY(!shot.isNull());
        if (!outDir.isEmpty()) QVERIFY(shot.save(outDir + QLatin1Char('/') + name));
    };
    QTemporaryDir dir;
    const std::string path = dir.filePath(QStringLiteral("runs.sqlite")).toStdString();
    const QString lesson = qEnvironmentVariable("MANTISSA_SOURCE_DIR") +
                           QStringLiteral("/resources/experiments/lessons/01-fp16-underflow.json");
    Experiment base = load_experiment(lesson.toStdString());
    base.lesson = {};
    Experiment fp32 = base, noScale = base, dynamic = base;
    fp32.name = "blobs-fp32";
    fp32.precision.autocast = Autocast::off;
    noScale.name = "blobs-fp16-no-scaling";
    dynamic.name = "blobs-fp16-dynamic";
    dynamic.precision.loss_scaling.mode = LossScalingMode::dynamic;
    const std::int64_t a = trainRun(path, fp32, "lesson, baseline", "FP32 reference for the underflow lesson.");
    const std::int64_t b = trainRun(path, noScale, "lesson, fp16", "Gradients flush to zero late in training.");
    const std::int64_t c = trainRun(path, dynamic, "lesson, fp16", "Dynamic scaling keeps them.");
    Experiment bf16 = spirals("spirals-bf16-no-master", 200);
    bf16.precision.autocast = Autocast::bf16;
    bf16.precision.master_weights = false;
    bf16.precision.loss_scaling.mode = LossScalingMode::off;
    trainRun(path, bf16, "spirals");
    Experiment perLayer = spirals("spirals-fp16-fc3-fp32", 200);
    perLayer.precision.autocast = Autocast::fp16;
    perLayer.precision.layers["fc3"] = LayerPrecision::fp32;
    trainRun(path, perLayer, "spirals, per-layer");
    std::shared_ptr<Recorder> live;
    {
        RunStore store(path);
        Experiment fp8;  // Fashion-MNIST defaults
        fp8.name = "fmnist-fp8-try";
        fp8.precision.autocast = Autocast::bf16;
        fp8.precision.layers = {{"fc1", LayerPrecision::fp8_e4m3}, {"fc2", LayerPrecision::fp8_e4m3}};
        syntheticRun(store, fp8.name, 60, RunStatus::failed, experiment_to_json(fp8).dump());
        Experiment longRun;
        longRun.name = "fmnist-fp16-long";
        longRun.precision.autocast = Autocast::fp16;
        longRun.train.epochs = 20;
        live = syntheticRun(store, longRun.name, 120, RunStatus::running, experiment_to_json(longRun).dump());
        store.set_tags(live->run_id(), "fmnist");
    }
    RunStore probe(path, true);
    QTRY_VERIFY_WITH_TIMEOUT(probe.steps(live->run_id()).size() == 120, 5000);

    RunBrowser browser;
    QVERIFY(browser.openStore(QString::fromStdString(path)));
    browser.resize(1440, 420);
    browser.show();
    browser.selectRuns({b});
    QVERIFY(QTest::qWaitForWindowExposed(&browser));
    keep(&browser, QStringLiteral("browser.png"));
    if (QTest::currentTestFailed()) return;

    CompareView* compare = browser.compareRuns({a, b, c});
    QVERIFY(compare);
    compare->resize(1400, 900);
    compare->setLogLoss(true);
    QVERIFY(QTest::qWaitForWindowExposed(compare));
    compare->redrawNow();
    QTest::qWait(50);
    keep(compare, QStringLiteral("compare.png"));
    if (QTest::currentTestFailed()) return;
    if (qEnvironmentVariableIsSet("HISTORY_VIEWER_SHOT")) {
        RunViewer* v = browser.openRun(live->run_id());
        QVERIFY(v);
        v->resize(1200, 900);
        QVERIFY(QTest::qWaitForWindowExposed(v));
        v->chartsPanel()->redrawNow(true);
        QVERIFY(v->grab().save(qEnvironmentVariable("HISTORY_VIEWER_SHOT")));
    }
    live->finish(RunStatus::completed);
}

QTEST_MAIN(TestHistoryCompare)
#include "test_history_compare.moc"
