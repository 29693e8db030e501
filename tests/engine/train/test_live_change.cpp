// plan_live_change: a "KEY=VALUE" assignment turned into what a running session needs, through the
// engine's own parser: per-layer settings, one command per other change, nothing for a value
// already in effect, and a sentence for what cannot change during a run.
#include <QtTest>

#include <cmath>

#include "error.h"
#include "train/live_change.h"

using namespace mantissa;

namespace {
const std::vector<std::string> layers = {"fc1", "fc2", "fc3"};

QString describe(const Command& c) {
    return std::visit(
        [](const auto& cmd) -> QString {
            using T = std::decay_t<decltype(cmd)>;
            if constexpr (std::is_same_v<T, command::SetAutocast>)
                return QStringLiteral("autocast %1").arg(QLatin1String(autocast_name(cmd.autocast)));
            else if constexpr (std::is_same_v<T, command::SetMasterWeights>)
                return QStringLiteral("master %1").arg(cmd.enabled);
            else if constexpr (std::is_same_v<T, command::SetLossScaling>)
                return QStringLiteral("scaling %1 %2")
                    .arg(QLatin1String(loss_scaling_mode_name(cmd.spec.mode)))
                    .arg(cmd.spec.growth_interval);
            else if constexpr (std::is_same_v<T, command::SetFp8Scaling>)
                return QStringLiteral("fp8 %1").arg(QLatin1String(fp8_scaling_name(cmd.scaling)));
            else if constexpr (std::is_same_v<T, command::SetLearningRate>)
                return QStringLiteral("lr %1").arg(cmd.lr);
            else if constexpr (std::is_same_v<T, command::InjectNonFinite>)
                return QStringLiteral("inject %1 %2").arg(QString::fromStdString(cmd.layer)).arg(std::isinf(cmd.value));
            else
                return QStringLiteral("other");
        },
        c);
}
}  // namespace

class TestLiveChange : public QObject {
    Q_OBJECT
private slots:
    void assignmentsBecomeCommands_data() {
        QTest::addColumn<QString>("assignment");
        QTest::addColumn<QString>("layerChanges");  // "fc2=fp16", comma-separated
        QTest::addColumn<QString>("commands");      // describe(), comma-separated
        QTest::newRow("autocast") << "precision.autocast=bf16" << "" << "autocast bf16";
        QTest::newRow("master weights") << "precision.master_weights=false" << "" << "master 0";
        QTest::newRow("scaling mode") << "precision.loss_scaling.mode=off" << "" << "scaling off 2000";
        QTest::newRow("growth interval") << "precision.loss_scaling.growth_interval=100" << "" << "scaling dynamic 100";
        QTest::newRow("learning rate") << "train.lr=0.5" << "" << "lr 0.5";
        QTest::newRow("fp8 scaling") << "precision.fp8.scaling=none" << "" << "fp8 none";
        QTest::newRow("layer") << "precision.layers.fc2=fp16" << "fc2=fp16" << "";
        QTest::newRow("layer back to auto") << "precision.layers.fc3=auto" << "fc3=auto" << "";
        // One matmul of a layer: the two others keep what they were (fc3: fp32).
        QTest::newRow("one gemm") << "precision.layers.fc3.wgrad=bf16" << "fc3=forward fp32, dgrad fp32, wgrad bf16" << "";
        QTest::newRow("gemm object") << R"(precision.layers.fc1={"forward": "mxfp4"})"
                                     << "fc1=forward mxfp4, dgrad auto, wgrad auto" << "";
        QTest::newRow("already in effect") << "precision.autocast=off" << "" << "";
        QTest::newRow("inject") << "inject=fc1" << "" << "inject fc1 1";
    }
    void assignmentsBecomeCommands() {
        QFETCH(QString, assignment);
        QFETCH(QString, layerChanges);
        QFETCH(QString, commands);
        Experiment current;
        current.precision.layers["fc3"] = LayerPrecision::fp32;
        const LiveChange change = plan_live_change(current, layers, assignment.toStdString());
        QStringList gotLayers, gotCommands;
        for (const auto& [name, p] : change.layers)
            gotLayers << QStringLiteral("%1=%2").arg(QString::fromStdString(name), QString::fromStdString(layer_setting_text(p)));
        for (const Command& c : change.commands) gotCommands << describe(c);
        QCOMPARE(gotLayers.join(QLatin1Char(',')), layerChanges);
        QCOMPARE(gotCommands.join(QLatin1Char(',')), commands);
    }

    void theResultingExperimentHasTheChange() {
        Experiment current;
        const LiveChange change = plan_live_change(current, layers, "precision.layers.fc1=bf16");
        QCOMPARE(change.after.precision.layers.at("fc1"), LayerPrecision::bf16);
        QCOMPARE(change.after.model.hidden, current.model.hidden);
    }

    void refusals_data() {
        QTest::addColumn<QString>("assignment");
        QTest::addColumn<QString>("mentions");
        QTest::newRow("model") << "model.hidden=[4]" << "new run";
        QTest::newRow("dataset") << "dataset.kind=spirals" << "new run";
        QTest::newRow("fp8 history") << "precision.fp8.amax_history_len=4" << "new run";
        QTest::newRow("unknown layer") << "precision.layers.fc9=fp16" << "fc9";
        QTest::newRow("inject unknown layer") << "inject=fc9" << "fc9";
        QTest::newRow("bad value") << "precision.autocast=fp64" << "precision.autocast";
        QTest::newRow("unknown key") << "train.nonsense=1" << "nonsense";
    }
    void refusals() {
        QFETCH(QString, assignment);
        QFETCH(QString, mentions);
        try {
            plan_live_change(Experiment{}, layers, assignment.toStdString());
            QFAIL("no error");
        } catch (const Error& e) {
            QVERIFY2(QString::fromStdString(e.what()).contains(mentions), e.what());
        }
    }

    // The layers' changes come first, as SetLayerPrecision commands, then the others.
    void commandsIncludeTheLayers() {
        Experiment current;
        current.precision.autocast = Autocast::fp16;
        const LiveChange change = plan_live_change(current, layers, "precision={\"autocast\": \"bf16\", "
                                                                    "\"layers\": {\"fc2\": \"fp32\"}}");
        const std::vector<Command> all = live_change_commands(change);
        QCOMPARE(all.size(), std::size_t(2));
        const auto* layer = std::get_if<command::SetLayerPrecision>(&all[0]);
        QVERIFY(layer && layer->layer == "fc2" && layer->precision == LayerPrecision::fp32);
        QVERIFY(std::holds_alternative<command::SetAutocast>(all[1]));
    }

    void scheduledChangesParse_data() {
        QTest::addColumn<QString>("text");
        QTest::addColumn<qlonglong>("step");  // -1: refused
        QTest::addColumn<QString>("assignment");
        QTest::newRow("setting") << "100:precision.layers.fc1=fp16" << 100LL << "precision.layers.fc1=fp16";
        QTest::newRow("inject") << "0:inject=fc2" << 0LL << "inject=fc2";
        QTest::newRow("value with a colon") << "5:name=a:b" << 5LL << "name=a:b";
        // Refused (step -1): the start of the sentence, naming the part that is wrong where it can.
        QTest::newRow("no step") << "precision.autocast=bf16" << -1LL << "--at takes STEP:KEY=VALUE";
        QTest::newRow("negative step") << "-3:train.lr=1" << -1LL
                                       << "--at -3:train.lr=1: the step is negative; steps count from 0 (STEP:KEY=VALUE";
        QTest::newRow("step beyond any run")
            << "99999999999999999999:train.lr=1" << -1LL
            << "--at 99999999999999999999:train.lr=1: the step has more than 15 digits, beyond any run";
        QTest::newRow("no value") << "3:train.lr=" << -1LL << "--at 3:train.lr=: train.lr is given no value";
        QTest::newRow("no key") << "3:=1" << -1LL << "--at takes STEP:KEY=VALUE";
        QTest::newRow("no assignment") << "3:" << -1LL << "--at takes STEP:KEY=VALUE";
        QTest::newRow("a step that is no number") << "1-2:train.lr=1" << -1LL << "--at takes STEP:KEY=VALUE";
    }
    void scheduledChangesParse() {
        QFETCH(QString, text);
        QFETCH(qlonglong, step);
        QFETCH(QString, assignment);
        try {
            const ScheduledChange c = parse_scheduled_change(text.toStdString(), "--at");
            QVERIFY2(step >= 0, "accepted");
            QCOMPARE(qlonglong(c.step), step);
            QCOMPARE(QString::fromStdString(c.assignment), assignment);
        } catch (const Error& e) {
            QVERIFY2(step < 0, e.what());
            QVERIFY2(QString::fromStdString(e.what()).startsWith(assignment), e.what());
        }
    }

    // Checked in step order, each against the experiment the earlier ones leave: switching fc2
    // to fp16 at 20 and back to auto at 10 is fine in that order; the model's layers decide.
    void scheduledChangesAreCheckedInStepOrder() {
        Experiment e;
        e.model.hidden = {8};  // layers fc1, fc2
        const std::vector<ScheduledChange> sorted =
            check_scheduled_changes(e, {{20, "precision.layers.fc2=fp16"}, {10, "train.lr=0.5"}}, "--at");
        QCOMPARE(sorted.front().step, std::int64_t(10));
        try {
            check_scheduled_changes(e, {{20, "inject=fc3"}}, "--at");
            QFAIL("fc3 accepted on a two-layer model");
        } catch (const Error& err) {
            QVERIFY2(QString::fromStdString(err.what()).startsWith("--at 20:inject=fc3 cannot apply: "), err.what());
        }
    }

    // A change at a step the run never reaches is refused with a sentence naming it and the run's
    // length (a run of 3 steps takes steps 0, 1 and 2), not dropped without a word.
    void scheduledStepsBeyondTheRunAreRefused() {
        const std::vector<ScheduledChange> within = {{0, "train.lr=0.5"}, {2, "inject=fc2"}};
        check_scheduled_steps(within, 3, "--at");  // nothing thrown
        try {
            check_scheduled_steps({{1, "train.lr=0.5"}, {4, "train.lr=0.1"}}, 3, "--at");
            QFAIL("a change at step 4 of a 3-step run was accepted");
        } catch (const Error& err) {
            QCOMPARE(QString::fromStdString(err.what()),
                     QString("--at 4:train.lr=0.1 is beyond the run: it takes 3 steps, so step 4 never comes; give one "
                             "of steps 0 to 2, or train longer (--steps)."));
        }
        try {
            check_scheduled_steps({{3, "inject=fc1"}}, 3, "--at");  // the step after the last
            QFAIL("a change at step 3 of a 3-step run was accepted");
        } catch (const Error& err) {
            QVERIFY2(QString::fromStdString(err.what()).startsWith("--at 3:inject=fc1 is beyond the run"), err.what());
        }
        try {
            check_scheduled_steps({{1, "inject=fc1"}}, 1, "--at");
            QFAIL("a change at step 1 of a 1-step run was accepted");
        } catch (const Error& err) {
            QVERIFY2(QString::fromStdString(err.what()).contains("it takes 1 step, so step 1 never comes; give step 0"),
                     err.what());
        }
    }
};

QTEST_APPLESS_MAIN(TestLiveChange)
#include "test_live_change.moc"
