// A language model in the window. Before a run, the GPT preset's plan: every op's format and the
// rule that chose it in the Layers table ("fp32 — autocast's FP32 list" for a layer norm, "bf16 —
// autocast" for qkv, the attention's scores, softmax and P·V as rows of their own), recomputed
// when the precision changes; the Precision panel's softmax and layernorm rows and the Sample dock
// only for such a model. The softmax combo posts SetOpPrecision during a run. The Sample view
// shows an evaluation event's prompt and continuation; the op charts draw what the telemetry
// ring's on_op_steps carries. And a tiny GPT trained for real: the setting reaches the session,
// samples and op statistics arrive live, and a reopened run shows its samples and op statistics.
#include <QtTest>

#include <QComboBox>
#include <QDockWidget>
#include <QFile>
#include <QTableView>
#include <QTextCursor>
#include <QTextEdit>

#include <cmath>
#include <variant>

#include <nlohmann/json.hpp>

#include "charts/charts_panel.h"
#include "history/run_viewer.h"
#include "live/telemetry_ring.h"
#include "main_window_fixture.h"
#include "models/layer_table_model.h"
#include "panels/layers_panel.h"
#include "panels/precision_panel.h"
#include "panels/sample_panel.h"
#include "series/language_figures.h"
#include "store/run_store.h"
#include "tiny_gpt.h"

using namespace mantissa;
using namespace mantissa::ui;

namespace {

Experiment gptPreset() {
    return load_experiment(qEnvironmentVariable("MANTISSA_SOURCE_DIR").toStdString() +
                           "/resources/experiments/gpt-text.json");
}

int rowNamed(const LayerTableModel& m, const QString& name) { return m.rowOf(name); }

QString text(const LayerTableModel& m, int row, int column) { return m.index(row, column).data().toString(); }

// A GPT small enough to train a few steps a second on a busy machine, on a text file of its own.
Experiment tinyGpt(const QString& textFile) {
    Experiment e = test::tiny_gpt_experiment(textFile.toStdString());
    e.dataset.test_fraction = 0.2;
    e.train.batch_size = 4;
    e.train.steps = 1'000'000;
    e.train.eval_every = 3;
    e.train.layer_stats_every = 1;
    e.precision.autocast = Autocast::bf16;
    return e;
}

QComboBox* opCombo(PrecisionPanel* p, const char* name) { return p->findChild<QComboBox*>(QString::fromLatin1(name)); }

void pick(QComboBox* combo, OpPrecision p) {
    const int i = combo->findData(static_cast<int>(p));
    combo->setCurrentIndex(i);
    emit combo->activated(i);
}

Event evaluationEvent(std::int64_t step, const std::string& prompt, const std::string& sample, double loss) {
    Event e;
    e.kind = EventKind::evaluation;
    e.step = step;
    nlohmann::json data = {{"loss", loss},     {"perplexity", std::exp(loss)}, {"accuracy", 0.25},
                           {"prompt", prompt}, {"sample", sample},             {"temperature", 0.8}};
    e.data_json = data.dump();
    return e;
}

}  // namespace

class TestLanguageModelViews : public QObject {
    Q_OBJECT
private slots:
    // A model whose output went NaN: its figures read "—" (not "nan", as everywhere the window
    // writes them: series/language_figures.h) and the engine's sentence says why there is no text.
    void sampleOfAModelGoneNan() {
        RunSeries series;
        SamplePanel panel;
        panel.setSeries(&series);
        series.setTextRun(true);
        Event e = evaluationEvent(300, "The glory of cre", "", std::nan(""));
        nlohmann::json data = nlohmann::json::parse(e.data_json);
        data["stopped"] = "The model's output is NaN or inf, so no token can be drawn.";
        e.data_json = data.dump();
        series.addEvent(e);
        panel.sync();
        QCOMPARE(panel.sampleCount(), std::size_t{1});
        QVERIFY2(panel.headerText().contains(QStringLiteral("test loss — nats/token")), qPrintable(panel.headerText()));
        QVERIFY(panel.headerText().contains(QStringLiteral("perplexity —")));
        QVERIFY(panel.textView()->toPlainText().endsWith(QStringLiteral("no token can be drawn.")));
        QVERIFY(panel.textView()->toPlainText().startsWith(QStringLiteral("The glory of cre")));
        QCOMPARE(natsPerTokenText(2.0), QStringLiteral("2.0000"));
        QCOMPARE(perplexityText(std::nan("")), QStringLiteral("—"));
    }

    void planListsEveryOpWithItsReason() {
        QTemporaryDir dir;
        auto w = window_test::openWindow(dir);
        w->setExperiment(gptPreset());
        LayerTableModel& m = *w->layerModel();
        QVERIFY(m.showsOps());
        QVERIFY(!w->layersPanel()->view()->isColumnHidden(LayerTableModel::FormatWhy));
        const int ln1 = rowNamed(m, "blocks.0.ln1");
        const int qkv = rowNamed(m, "blocks.0.attn.qkv");
        QVERIFY(ln1 >= 0 && qkv >= 0);
        QCOMPARE(text(m, ln1, LayerTableModel::FormatWhy), QStringLiteral("fp32 — autocast's FP32 list"));
        QCOMPARE(text(m, qkv, LayerTableModel::FormatWhy), QStringLiteral("bf16 — autocast"));
        QCOMPARE(text(m, qkv, LayerTableModel::Precision), QStringLiteral("auto → bf16"));
        QVERIFY(m.flags(m.index(qkv, LayerTableModel::Precision)) & Qt::ItemIsEditable);  // still editable
        // The attention's three ops without parameters, under its qkv projection.
        const QStringList ops = {"blocks.0.attn.scores", "blocks.0.attn.softmax", "blocks.0.attn.pv"};
        for (int i = 0; i < 3; ++i) {
            QCOMPARE(m.layerName(qkv + 1 + i), ops[i]);
            QVERIFY(m.isOpRow(qkv + 1 + i));
            QVERIFY(!(m.flags(m.index(qkv + 1 + i, LayerTableModel::Precision)) & Qt::ItemIsEditable));
            QVERIFY(text(m, qkv + 1 + i, LayerTableModel::GradAmax).isEmpty());  // no telemetry of their own
        }
        QCOMPARE(text(m, qkv + 1, LayerTableModel::FormatWhy), QStringLiteral("bf16 — autocast"));
        QCOMPARE(text(m, qkv + 2, LayerTableModel::FormatWhy), QStringLiteral("fp32 — autocast's FP32 list"));
        QCOMPARE(text(m, rowNamed(m, "wte"), LayerTableModel::FormatWhy).left(7), QStringLiteral("fp32 — "));
        int opRows = 0;
        for (int r = 0; r < m.rowCount(); ++r) opRows += m.isOpRow(r);
        QCOMPARE(opRows, 3 * 4);  // four blocks

        // The op classes' controls are there, and an edit before Start reaches the plan at once.
        PrecisionPanel* p = w->precisionPanel();
        QVERIFY(p->showsOpClass("softmax") && p->showsOpClass("layernorm"));
        pick(opCombo(p, "opSoftmax"), OpPrecision::fp16);
        QCOMPARE(p->precision().ops.softmax, OpPrecision::fp16);
        QCOMPARE(text(m, qkv + 2, LayerTableModel::FormatWhy), QStringLiteral("fp16 — precision.ops.softmax"));
        QCOMPARE(text(m, qkv + 2, LayerTableModel::Precision), QStringLiteral("fp16"));
        pick(opCombo(p, "opLayerNorm"), OpPrecision::bf16);
        QCOMPARE(text(m, ln1, LayerTableModel::FormatWhy), QStringLiteral("bf16 — precision.ops.layernorm"));
        // A row's own setting is a reason too, and autocast off changes the rest.
        QVERIFY(m.setData(m.index(qkv, LayerTableModel::Precision), QStringLiteral("fp32")));
        QCOMPARE(text(m, qkv, LayerTableModel::FormatWhy), QStringLiteral("fp32 — precision.layers.blocks.0.attn.qkv"));
        QVERIFY(w->sampleDock()->isVisibleTo(w.get()));

        // An MLP: no op rows, no Format (why) column, no op-class controls, no Sample dock.
        w->setExperiment(window_test::endlessSpirals("mlp", {16}, 50));
        QVERIFY(!m.showsOps());
        for (int r = 0; r < m.rowCount(); ++r) QVERIFY(!m.isOpRow(r));
        QVERIFY(w->layersPanel()->view()->isColumnHidden(LayerTableModel::FormatWhy));
        QVERIFY(!p->showsOpClass("softmax") && !p->showsOpClass("layernorm"));
        QVERIFY(!w->sampleDock()->isVisibleTo(w.get()));
    }

    void softmaxComboPostsTheCommandLive() {
        PrecisionPanel p;
        p.setOpClasses(true, true);
        std::vector<Command> sent;
        connect(&p, &PrecisionPanel::commandRequested, &p, [&](const Command& c) { sent.push_back(c); });
        pick(opCombo(&p, "opSoftmax"), OpPrecision::fp16);
        QVERIFY(sent.empty());  // before a run: the experiment only
        QCOMPARE(p.precision().ops.softmax, OpPrecision::fp16);
        p.setLive(true, {"blocks.0.attn.qkv"});
        pick(opCombo(&p, "opSoftmax"), OpPrecision::bf16);
        pick(opCombo(&p, "opLayerNorm"), OpPrecision::fp16);
        QCOMPARE(sent.size(), std::size_t{2});
        const auto* softmax = std::get_if<command::SetOpPrecision>(&sent[0]);
        QVERIFY(softmax);
        QCOMPARE(softmax->op_class, std::string("softmax"));
        QCOMPARE(softmax->precision, OpPrecision::bf16);
        const auto* norm = std::get_if<command::SetOpPrecision>(&sent[1]);
        QVERIFY(norm);
        QCOMPARE(norm->op_class, std::string("layernorm"));
        QCOMPARE(norm->precision, OpPrecision::fp16);
        QVERIFY(!opCombo(&p, "opSoftmax")->toolTip().isEmpty());
    }

    // A byte-level model writes control characters: the panel shows them escaped, as
    // `mantissa-cli show` prints the sample (store::printable_text), never as empty boxes; line
    // breaks and tabs stay, a CRLF is one line break.
    void sampleShowsControlCharactersEscaped() {
        RunSeries series;
        SamplePanel panel;
        panel.setSeries(&series);
        series.setTextRun(true);
        series.addEvent(evaluationEvent(100, "ab\x08" "c\r\n", "d\u009de\tf\x1b[0m", 2.0));
        panel.sync();
        QCOMPARE(panel.sampleCount(), std::size_t{1});
        QCOMPARE(panel.promptText(), QStringLiteral("ab\\x08c\n"));
        QCOMPARE(panel.continuationText(), QStringLiteral("d\\u009de\tf\\x1b[0m"));
        QCOMPARE(panel.textView()->toPlainText(), QStringLiteral("ab\\x08c\nd\\u009de\tf\\x1b[0m"));
    }

    void sampleViewShowsTheEvaluationsSample() {
        RunSeries series;
        SamplePanel panel;
        panel.setSeries(&series);
        QCOMPARE(panel.sampleCount(), std::size_t{0});
        series.setTextRun(true);
        series.addEvent(evaluationEvent(100, "Q: Why?\n", "A: Because.\nQ: And?", 2.0));
        panel.sync();
        QCOMPARE(panel.sampleCount(), std::size_t{1});
        QCOMPARE(panel.promptText(), QStringLiteral("Q: Why?\n"));
        QCOMPARE(panel.continuationText(), QStringLiteral("A: Because.\nQ: And?"));
        // One text, line breaks kept; the prompt in a muted colour, the continuation in the text's.
        QCOMPARE(panel.textView()->toPlainText(), QStringLiteral("Q: Why?\nA: Because.\nQ: And?"));
        QVERIFY(panel.headerText().contains(QStringLiteral("2.0000 nats/token")));
        QVERIFY(panel.headerText().contains(QStringLiteral("perplexity 7.39")));
        QTextCursor atPrompt(panel.textView()->document());
        atPrompt.setPosition(1);
        QTextCursor atSample(panel.textView()->document());
        atSample.setPosition(static_cast<int>(panel.promptText().size()) + 2);
        QVERIFY(atPrompt.charFormat().foreground().color() != atSample.charFormat().foreground().color());

        // The newest is followed; an earlier one picked stays until the newest is picked again.
        series.addEvent(evaluationEvent(200, "x", "second", 1.5));
        panel.sync();
        QCOMPARE(panel.continuationText(), QStringLiteral("second"));
        panel.stepPicker()->setCurrentIndex(0);
        emit panel.stepPicker()->activated(0);
        series.addEvent(evaluationEvent(300, "x", "third", 1.2));
        panel.sync();
        QCOMPARE(panel.sampleCount(), std::size_t{3});
        QCOMPARE(panel.continuationText(), QStringLiteral("A: Because.\nQ: And?"));
    }

    void opChartsDrawTheRingsOpStatistics() {
        TelemetryRing ring(4);
        RunSeries series;
        LayerInfo ln, qkv;
        ln.name = "blocks.0.ln1";
        ln.kind = "layernorm";
        qkv.name = "blocks.0.attn.qkv";
        qkv.kind = "linear";
        series.reset({ln.name, qkv.name});
        series.declareOpStats(opStatsOf({ln, qkv}));
        ChartsPanel charts;
        charts.resize(900, 1400);
        charts.setSeries(&series);
        charts.show();
        QVERIFY(charts.logitsChart()->isVisibleTo(&charts));
        QVERIFY(charts.varianceChart()->isVisibleTo(&charts));
        for (std::int64_t step = 0; step < 50; step += 10) {
            StepRecord s;
            s.step = step;
            ring.on_step(s, {});
            ring.on_op_steps({{step, "blocks.0.attn", "logit_amax", 4.0 + static_cast<double>(step)},
                              {step, "blocks.0.ln1", "min_variance", 0.01 / static_cast<double>(step + 1)}});
        }
        ring.drainSteps([&](StepPacket& p) { series.addStep(p.step); });
        QCOMPARE(ring.drainOps([&](OpPacket& p) { series.addOpSteps(p.ops); }), std::size_t{5});
        charts.redrawNow(true);
        ChartView* logits = charts.logitsChart();
        QCOMPARE(logits->graphCount(), 1);
        QCOMPARE(logits->graph(0)->name(), QStringLiteral("blocks.0.attn"));
        QVERIFY(logits->graph(0)->dataCount() > 0);
        QCOMPARE(logits->referenceValue(), 65504.0);
        QVERIFY(logits->yAxis->range().contains(65504.0));  // FP16's largest value in view
        QVERIFY(logits->yAxis->range().contains(44.0));
        QCOMPARE(charts.varianceChart()->graphCount(), 1);
        QVERIFY(charts.varianceChart()->graph(0)->dataCount() > 0);
        // Every chart numbers its steps, the lowest one names the axis; the op charts sit under
        // the loss scale.
        QVERIFY(charts.underflowChart()->xAxis->tickLabels());
        QVERIFY(charts.varianceChart()->xAxis->tickLabels() && charts.varianceChart()->xAxis->label().isEmpty());
        QCOMPARE(charts.charts()[2], charts.logitsChart());

        // A model without such ops: no op charts, the underflow chart labels the steps again.
        RunSeries mlp;
        mlp.reset({"fc1"});
        charts.setSeries(&mlp);
        QVERIFY(!charts.logitsChart()->isVisibleTo(&charts));
        QVERIFY(!charts.varianceChart()->isVisibleTo(&charts));
        QVERIFY(charts.underflowChart()->xAxis->tickLabels());
        QCOMPARE(charts.lossChart()->valueLabel(), QStringLiteral("loss"));
        series.setTextRun(true);
        charts.setSeries(&series);
        QCOMPARE(charts.lossChart()->valueLabel(), QStringLiteral("loss (nats/token)"));
        charts.setSeries(nullptr);
    }

    // The whole path on a tiny GPT: a live softmax change reaches the session, op statistics and
    // samples arrive through the ring, and the reopened run shows its samples.
    void aTinyGptTrainsAndShowsItsSamples() {
        QTemporaryDir dir;
        const QString corpus = dir.filePath(QStringLiteral("corpus.txt"));
        {
            QFile f(corpus);
            QVERIFY(f.open(QIODevice::WriteOnly));
            for (int i = 0; i < 60; ++i) f.write("the quick brown fox jumps over the lazy dog.\nhello world!\n");
        }
        auto w = window_test::openWindow(dir);
        w->setExperiment(tinyGpt(corpus));
        QVERIFY(w->sampleDock()->isVisibleTo(w.get()));
        QVERIFY(w->startRun());
        RunController* c = w->controller();
        QVERIFY(QTest::qWaitFor([&] { return c->stepsDone() >= 2; }, 60000));
        pick(opCombo(w->precisionPanel(), "opSoftmax"), OpPrecision::fp16);
        QVERIFY(QTest::qWaitFor(
            [&] {
                for (const Event& e : c->series().events())
                    if (e.kind == EventKind::setting_change && e.data_json.find("precision.ops.softmax") != std::string::npos)
                        return true;
                return false;
            },
            60000));
        const int softmax = w->layerModel()->rowOf(QStringLiteral("blocks.0.attn.softmax"));
        QVERIFY(softmax >= 0);
        QCOMPARE(text(*w->layerModel(), softmax, LayerTableModel::FormatWhy), QStringLiteral("fp16 — precision.ops.softmax"));
        QVERIFY(QTest::qWaitFor([&] { return !c->series().textSamples().empty(); }, 60000));
        QVERIFY(QTest::qWaitFor([&] { return c->series().hasOpStat("logit_amax") && !c->series().opStats().front().values.empty(); },
                                60000));
        w->refreshViews();
        QVERIFY(w->samplePanel()->sampleCount() > 0);
        QCOMPARE(w->samplePanel()->promptText(), QString::fromStdString(c->series().textSamples().back().prompt));
        QVERIFY(!w->samplePanel()->continuationText().isEmpty());
        QVERIFY(w->chartsPanel()->logitsChart()->isVisibleTo(w.get()));
        QVERIFY(w->chartsPanel()->logitsChart()->graph(0)->dataCount() > 0);
        QVERIFY(w->chartsPanel()->lossChart()->valueLabel().contains(QStringLiteral("nats/token")));
        const std::int64_t runId = c->runId();
        QVERIFY(window_test::stopAndWait(*w));

        auto store = std::make_shared<RunStore>(dir.filePath(QStringLiteral("runs.sqlite")).toStdString());
        RunViewer viewer(store, runId);
        QVERIFY(viewer.load());
        QVERIFY(viewer.samplePanel()->isVisibleTo(&viewer));
        QVERIFY(viewer.samplePanel()->sampleCount() > 0);
        QVERIFY(viewer.summaryText().contains(QStringLiteral("perplexity")));
        // Its op statistics come back from the store's op_steps, and the charts draw them.
        QVERIFY(viewer.series().hasOpStat("logit_amax") && viewer.series().hasOpStat("min_variance"));
        QVERIFY(!viewer.series().opStats().front().values.empty());
        QVERIFY(viewer.chartsPanel()->logitsChart()->isVisibleTo(&viewer));
    }
};

QTEST_MAIN(TestLanguageModelViews)
#include "test_language_model_views.moc"
