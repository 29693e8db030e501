// A lesson's reference run (lesson.reference, classroom/reference_run.h) in the main window:
// opening the lesson trains the reference at full speed into the store (the lesson's experiment
// with the reference's settings, without the lesson) and overlays it on the charts under its label;
// opening the lesson again finds the recorded run and trains nothing; the overlay's points are the
// stored run's; opening a file without a reference takes the overlay off; a reference that cannot
// be trained (runs not recorded) says why and overlays nothing. Real runs (blobs, CPU, offscreen).
#include <QtTest>

#include <QSignalSpy>

#include <fstream>
#include <memory>

#include <nlohmann/json.hpp>

#include "charts/charts_panel.h"
#include "classroom/reference_run.h"
#include "live/run_controller.h"
#include "main_window.h"
#include "panels/notice_bar.h"
#include "series/run_series.h"
#include "store/run_store.h"

using namespace mantissa;
using namespace mantissa::ui;

namespace {

// A small lesson in FP16 without loss scaling whose reference is the same run in FP32.
Experiment lesson() {
    Experiment e;
    e.name = "reference-lesson";
    e.dataset.kind = "blobs";
    e.dataset.samples = 800;
    e.model.hidden = {16};
    e.train.batch_size = 64;
    e.train.steps = 40;
    e.train.eval_every = 0;
    e.precision.autocast = Autocast::fp16;
    e.precision.loss_scaling.mode = LossScalingMode::off;
    e.backend = "cpu";
    e.lesson.title = "A lesson with a reference";
    e.lesson.pace = 5;
    e.lesson.reference = LessonReference{"FP32", {"precision.autocast=off"}};
    return e;
}

int runsNamed(const QString& storePath, const std::string& name) {
    RunStore store(storePath.toStdString(), StoreAccess::read_only);
    int n = 0;
    for (const RunRow& r : store.list_runs()) n += r.name == name;
    return n;
}

}  // namespace

class TestLessonReference : public QObject {
    Q_OBJECT
private:
    QTemporaryDir m_dir;

    std::unique_ptr<MainWindow> makeWindow(const QString& storePath) {
        MainWindow::Options o;
        o.storePath = storePath;
        o.useSettings = false;
        auto w = std::make_unique<MainWindow>(o);
        w->resize(1200, 800);
        w->show();
        return w;
    }

private slots:
    void trainedOnceThenFound() {
        const QString storePath = m_dir.filePath(QStringLiteral("runs.sqlite"));
        const Experiment reference = lesson_reference_experiment(lesson());
        QCOMPARE(reference.name, std::string("reference-lesson-reference-fp32"));
        {
            auto w = makeWindow(storePath);
            QSignalSpy progress(w->referenceRun(), &ReferenceRun::progress);
            QSignalSpy ready(w->referenceRun(), &ReferenceRun::ready);
            w->setExperiment(lesson());
            QVERIFY(w->referenceRun()->training());
            QTRY_COMPARE_WITH_TIMEOUT(ready.count(), 1, 60000);
            QVERIFY(progress.count() >= 1);  // at least its start was said
            QVERIFY(!w->referenceRun()->training());
            const QString overlay = QStringLiteral("FP32 reference");
            QCOMPARE(w->chartsPanel()->overlays(), QStringList{overlay});
            QVERIFY(!w->controller()->active());  // the lesson itself waits for Start

            // The stored run is the reference experiment, completed, and the overlay draws its rows.
            const std::int64_t id = ready.at(0).at(1).value<std::int64_t>();
            RunStore store(storePath.toStdString(), StoreAccess::read_only);
            const RunRow row = store.run(id);
            QCOMPARE(row.status, RunStatus::completed);
            QCOMPARE(row.name, reference.name);
            QVERIFY(experiment_from_json(nlohmann::json::parse(row.config_json)) == reference);
            const auto steps = store.steps(id);
            QCOMPARE(steps.size(), std::size_t{40});
            const auto series = w->chartsPanel()->overlaySeries(overlay);
            QVERIFY(series);
            QCOMPARE(series->stepCount(), std::int64_t{40});
            QCOMPARE(series->lastStep()->loss, steps.back().loss);
        }
        QCOMPARE(runsNamed(storePath, "reference-lesson-reference-fp32"), 1);

        // A second window on the same store finds it and trains nothing.
        auto w = makeWindow(storePath);
        QSignalSpy ready(w->referenceRun(), &ReferenceRun::ready);
        w->setExperiment(lesson());
        QCOMPARE(ready.count(), 1);  // at once
        QVERIFY(!w->referenceRun()->training());
        QCOMPARE(w->chartsPanel()->overlays(), QStringList{QStringLiteral("FP32 reference")});
        QCOMPARE(runsNamed(storePath, "reference-lesson-reference-fp32"), 1);

        // The lesson runs beside its reference; a file without a reference takes the overlay off.
        Experiment plain = lesson();
        plain.lesson = LessonSpec{};
        w->setExperiment(plain);
        QVERIFY(w->chartsPanel()->overlays().isEmpty());
    }

    // Opening another lesson while the reference trains stops it (recorded `stopped`), and the
    // next opening trains it again rather than overlaying a run cut short.
    void cancelledWhenAnotherFileIsOpened() {
        const QString storePath = m_dir.filePath(QStringLiteral("cancel.sqlite"));
        auto w = makeWindow(storePath);
        Experiment slow = lesson();
        slow.train.steps = 1'000'000;
        w->setExperiment(slow);
        QVERIFY(w->referenceRun()->training());
        Experiment plain = lesson();
        plain.lesson = LessonSpec{};
        w->setExperiment(plain);
        QVERIFY(!w->referenceRun()->training());
        QVERIFY(w->chartsPanel()->overlays().isEmpty());
        RunStore store(storePath.toStdString(), StoreAccess::read_only);
        const auto runs = store.list_runs();
        QCOMPARE(runs.size(), std::size_t{1});
        QCOMPARE(runs[0].status, RunStatus::stopped);
        const Experiment reference = lesson_reference_experiment(slow);
        QCOMPARE(findCompletedRun(store, reference), std::int64_t{-1});
    }

    // Without a store to record in there is no reference: the window says so and overlays nothing.
    void noStoreNoReference() {
        auto w = makeWindow(m_dir.filePath(QStringLiteral("unused.sqlite")));
        w->controller()->setStorePath(QString());  // runs are not recorded
        QSignalSpy failed(w->referenceRun(), &ReferenceRun::failed);
        w->setExperiment(lesson());
        QCOMPARE(failed.count(), 1);
        QVERIFY(failed.at(0).at(0).toString().contains(QStringLiteral("not being recorded")));
        QVERIFY(w->chartsPanel()->overlays().isEmpty());
    }

    // The presets that name a reference can all make it (the settings apply to their experiments).
    void presetReferencesApply() {
        int withReference = 0;
        for (const QFileInfo& f :
             QDir(qEnvironmentVariable("MANTISSA_SOURCE_DIR") + QStringLiteral("/resources/experiments/lessons"))
                 .entryInfoList({QStringLiteral("*.json")})) {
            const Experiment e = load_experiment(f.absoluteFilePath().toStdString());
            if (!e.lesson.reference) continue;
            ++withReference;
            const Experiment ref = lesson_reference_experiment(e);
            QVERIFY2(!(ref.precision == e.precision), qPrintable(f.fileName()));  // it changes the precision
            QVERIFY2(ref.lesson == LessonSpec{}, qPrintable(f.fileName()));
        }
        QCOMPARE(withReference, 11);  // 01, 03, 04, 05, the transformer lessons 08, 09, 10, and 11, 12, 13, 15
    }
};

QTEST_MAIN(TestLessonReference)
#include "test_lesson_reference.moc"
