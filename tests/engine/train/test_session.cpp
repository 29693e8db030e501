// The threaded Session: a run to completion with its events and summary; commands posted from a
// sink at a known step become events at the next step and take effect there; pause blocks the
// training thread until resume; stop ends the run as stopped with a final evaluation; a failure
// on the training thread ends it as failed with the error (running out of memory as a sentence, not
// "std::bad_alloc"); bad input is refused at construction, and check_run_start refuses what the
// construction would, in its words, without the data; a checkpoint that cannot be written is a
// notice naming the folder and why; a GPU index the auto backend cannot use is a notice.
#include <QtTest>

#include <QFile>
#include <QTemporaryDir>

#include <atomic>
#include <chrono>
#include <functional>
#include <nlohmann/json.hpp>
#include <thread>

#include "error.h"
#include "config/throughput.h"
#include "train/session.h"
#include "train/start_check.h"
#include "train_support.h"

using namespace mantissa;
using namespace mantissa::test;

namespace {

Experiment session_experiment(std::int64_t steps) {
    Experiment e = quick_experiment(steps);
    e.dataset.kind = "blobs";
    e.dataset.samples = 1000;
    e.train.eval_every = 10;
    return e;
}

// A sink that also runs a callback on the training thread after each step.
class ScriptedSink : public CollectingSink {
public:
    std::function<void(const StepRecord&)> after_step;
    void on_step(const StepRecord& step, const std::vector<LayerStepRecord>& layers) override {
        CollectingSink::on_step(step, layers);
        if (after_step) after_step(step);
    }
};

// Polls `done` until it holds or 30 s pass (a generous bound: it only fails a broken session).
bool wait_until(const std::function<bool()>& done) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (!done()) {
        if (std::chrono::steady_clock::now() > deadline) return false;
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    return true;
}

}  // namespace

class TestSession : public QObject {
    Q_OBJECT
private slots:
    void runsToCompletion() {
        Session s(session_experiment(25));
        auto sink = std::make_shared<CollectingSink>();
        s.add_sink(sink);
        QCOMPARE(s.state(), SessionState::created);
        QCOMPARE(s.total_steps(), std::int64_t{25});
        QCOMPARE(s.layers().size(), std::size_t{3});
        QCOMPARE(s.layers()[0].parameters, std::int64_t{2 * 32 + 32});
        QCOMPARE(QString::fromStdString(s.backend_name()), QString("cpu"));
        s.start();
        s.wait();
        QCOMPARE(s.state(), SessionState::completed);
        const RunSummary r = s.summary();
        QCOMPARE(r.state, SessionState::completed);
        QCOMPARE(r.steps, std::int64_t{25});
        QCOMPARE(r.total_steps, std::int64_t{25});
        QVERIFY(r.error.empty());
        QVERIFY(r.samples_per_s > 0 && r.elapsed_s > 0);
        QVERIFY(r.test_accuracy > 0.5);
        QCOMPARE(r.final_loss, sink->steps.back().loss);
        QCOMPARE(sink->steps.size(), std::size_t{25});
        // evaluations at 10, 20 and the end (25)
        QCOMPARE(sink->evals.size(), std::size_t{3});
        QCOMPARE(sink->evals[0].step, std::int64_t{10});
        QCOMPARE(sink->evals[2].step, std::int64_t{25});
        QCOMPARE(r.test_loss, sink->evals.back().loss);
        QCOMPARE(sink->events.front().kind, EventKind::run_started);
        QCOMPARE(sink->events.back().kind, EventKind::run_finished);
        QVERIFY_THROWS_EXCEPTION(Error, s.start());
    }

    // Commands posted during step k are applied before step k+1: events at k+1, effect at k+1.
    void commandsBecomeEventsAtTheNextStep() {
        Experiment e = session_experiment(12);
        e.precision.loss_scaling.mode = LossScalingMode::dynamic;  // the injected step is skipped
        Session s(e);
        auto sink = std::make_shared<ScriptedSink>();
        Session* sp = &s;
        sink->after_step = [sp](const StepRecord& st) {
            if (st.step == 4) {
                sp->post(command::SetLayerPrecision{"fc1", LayerPrecision::fp16});
                sp->post(command::SetLearningRate{0.005});
                sp->post(command::SetLayerPrecision{"fc9", LayerPrecision::fp16});  // refused, run goes on
            }
            if (st.step == 7) sp->post(command::InjectNonFinite{"fc3", std::numeric_limits<float>::infinity()});
            if (st.step == 8) sp->post(command::SetMasterWeights{false});
        };
        s.add_sink(sink);
        s.start();
        s.wait();
        QCOMPARE(s.state(), SessionState::completed);
        const auto changes = sink->events_of(EventKind::setting_change);
        QCOMPARE(changes.size(), std::size_t{3});
        QCOMPARE(changes[0].step, std::int64_t{5});
        QCOMPARE(QString::fromStdString(nlohmann::json::parse(changes[0].data_json)["key"]),
                 QString("precision.layers.fc1"));
        QCOMPARE(changes[1].step, std::int64_t{5});
        QCOMPARE(QString::fromStdString(nlohmann::json::parse(changes[1].data_json)["key"]), QString("train.lr"));
        QCOMPARE(changes[2].step, std::int64_t{9});
        QCOMPARE(QString::fromStdString(nlohmann::json::parse(changes[2].data_json)["key"]),
                 QString("precision.master_weights"));
        // The layer records show the new precision from step 5 on, the lr too.
        for (const auto& l : sink->layer_records)
            if (l.layer == 0) QCOMPARE(l.precision, ComputeFormat(l.step >= 5 ? Format::fp16 : Format::fp32));
        QCOMPARE(sink->steps[4].learning_rate, 1e-3);
        QCOMPARE(sink->steps[5].learning_rate, 0.005);
        // The refused command is a notice; the injection overflows step 8, which is skipped.
        bool refused = false, injected = false;
        for (const auto& ev : sink->events_of(EventKind::notice)) {
            const auto j = nlohmann::json::parse(ev.data_json);
            if (j.contains("refused")) refused = true;
            if (j.contains("action")) {
                injected = true;
                QCOMPARE(ev.step, std::int64_t{8});
            }
        }
        QVERIFY(refused && injected);
        QVERIFY(sink->steps[8].overflow);
        QVERIFY(!sink->steps[7].overflow);
        const auto overflow = sink->events_of(EventKind::overflow);
        QCOMPARE(overflow.size(), std::size_t{1});
        QCOMPARE(QString::fromStdString(nlohmann::json::parse(overflow[0].data_json)["layer"]), QString("fc3"));
        QCOMPARE(s.summary().overflow_steps, std::int64_t{1});
        QCOMPARE(s.summary().skipped_steps, std::int64_t{1});
        QCOMPARE(s.summary().final_loss_scale, 32768.0);
        QCOMPARE(s.experiment().precision.layers.count("fc1"), std::size_t{0});  // as started
    }

    void pauseResumeStop() {
        Session s(session_experiment(1000));
        auto sink = std::make_shared<ScriptedSink>();
        Session* sp = &s;
        sink->after_step = [sp](const StepRecord& st) {
            if (st.step == 2) sp->post(command::Pause{});
        };
        s.add_sink(sink);
        s.start();
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
        while (s.state() != SessionState::paused && std::chrono::steady_clock::now() < deadline)
            std::this_thread::sleep_for(std::chrono::milliseconds(5));
        QCOMPARE(s.state(), SessionState::paused);
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
        QCOMPARE(s.summary().steps, std::int64_t{3});  // nothing runs while paused
        s.post(command::SetAutocast{Autocast::bf16});  // applied while paused, at step 3
        s.post(command::Resume{});
        while (s.summary().steps < 6 && std::chrono::steady_clock::now() < deadline)
            std::this_thread::sleep_for(std::chrono::milliseconds(5));
        s.request_stop();
        s.wait();
        QCOMPARE(s.state(), SessionState::stopped);
        const RunSummary r = s.summary();
        QCOMPARE(r.state, SessionState::stopped);
        QVERIFY(r.steps >= 6 && r.steps < 1000);
        QVERIFY(!std::isnan(r.test_accuracy));  // the final evaluation ran
        const auto paused = sink->events_of(EventKind::paused), resumed = sink->events_of(EventKind::resumed);
        QCOMPARE(paused.size(), std::size_t{1});
        QCOMPARE(resumed.size(), std::size_t{1});
        QCOMPARE(paused[0].step, std::int64_t{3});
        QCOMPARE(resumed[0].step, std::int64_t{3});
        const auto changes = sink->events_of(EventKind::setting_change);
        QCOMPARE(changes.size(), std::size_t{1});
        QCOMPARE(changes[0].step, std::int64_t{3});
        QCOMPARE(sink->events.back().kind, EventKind::run_stopped);
        QCOMPARE(sink->steps[3].step, std::int64_t{3});
    }

    // PauseAt stops the run exactly before its step however fast the steps are: posted before
    // start for the first pause, while paused for the next; changes made while paused land there.
    void pauseAtAnExactStep() {
        Session s(session_experiment(20));
        auto sink = std::make_shared<CollectingSink>();
        s.add_sink(sink);
        s.post(command::PauseAt{7});
        s.start();
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
        const auto wait_paused_at = [&](std::int64_t steps) {
            while (!(s.state() == SessionState::paused && s.summary().steps == steps) &&
                   std::chrono::steady_clock::now() < deadline)
                std::this_thread::sleep_for(std::chrono::milliseconds(2));
        };
        wait_paused_at(7);
        QCOMPARE(s.state(), SessionState::paused);
        QCOMPARE(s.summary().steps, std::int64_t{7});
        s.post(command::SetAutocast{Autocast::bf16});  // at step 7
        s.post(command::PauseAt{12});
        s.post(command::Resume{});
        wait_paused_at(12);
        QCOMPARE(s.state(), SessionState::paused);
        QCOMPARE(s.summary().steps, std::int64_t{12});
        s.post(command::Resume{});
        s.wait();
        QCOMPARE(s.state(), SessionState::completed);
        QCOMPARE(s.summary().steps, std::int64_t{20});
        const auto paused = sink->events_of(EventKind::paused), changes = sink->events_of(EventKind::setting_change);
        QCOMPARE(paused.size(), std::size_t{2});
        QCOMPARE(paused[0].step, std::int64_t{7});
        QCOMPARE(paused[1].step, std::int64_t{12});
        QCOMPARE(changes.size(), std::size_t{1});
        QCOMPARE(changes[0].step, std::int64_t{7});
    }

    // A quiet PauseAt (a script's means of acting at a step) pauses exactly there but logs
    // neither the pause nor the resume that ends it.
    void quietPauseAtLogsNoEvents() {
        Session s(session_experiment(12));
        auto sink = std::make_shared<CollectingSink>();
        s.add_sink(sink);
        s.post(command::PauseAt{4, true});
        s.start();
        QVERIFY(wait_until([&] { return s.state() == SessionState::paused; }));
        QCOMPARE(s.summary().steps, std::int64_t{4});
        s.post(command::SetAutocast{Autocast::bf16});
        s.post(command::Resume{});
        s.wait();
        QCOMPARE(s.state(), SessionState::completed);
        QVERIFY(sink->events_of(EventKind::paused).empty());
        QVERIFY(sink->events_of(EventKind::resumed).empty());
        const auto changes = sink->events_of(EventKind::setting_change);
        QCOMPARE(changes.size(), std::size_t{1});
        QCOMPARE(changes[0].step, std::int64_t{4});
    }

    // StepOnce on a paused run takes exactly one step and pauses again; a person's pause and
    // resume are logged once around the single steps, the steps themselves log nothing.
    void stepOnceTakesOneStep() {
        Session s(session_experiment(20));
        auto sink = std::make_shared<CollectingSink>();
        s.add_sink(sink);
        s.post(command::Pause{});
        s.start();
        QVERIFY(wait_until([&] { return s.state() == SessionState::paused; }));
        for (std::int64_t n = 1; n <= 3; ++n) {
            s.post(command::StepOnce{});
            QVERIFY(wait_until([&] { return s.state() == SessionState::paused && s.summary().steps == n; }));
            std::this_thread::sleep_for(std::chrono::milliseconds(20));  // it stays there
            QCOMPARE(s.summary().steps, n);
            QCOMPARE(s.state(), SessionState::paused);
        }
        s.post(command::Resume{});
        s.wait();
        QCOMPARE(s.state(), SessionState::completed);
        QCOMPARE(sink->steps.size(), std::size_t{20});
        const auto paused = sink->events_of(EventKind::paused), resumed = sink->events_of(EventKind::resumed);
        QCOMPARE(paused.size(), std::size_t{1});
        QCOMPARE(paused[0].step, std::int64_t{0});
        QCOMPARE(resumed.size(), std::size_t{1});
        QCOMPARE(resumed[0].step, std::int64_t{3});
    }

    // StepOnce on a running run does nothing; on a quietly paused run it steps and stays quiet.
    void stepOnceWhileRunningIsIgnored() {
        Session s(session_experiment(15));
        auto sink = std::make_shared<ScriptedSink>();
        Session* sp = &s;
        sink->after_step = [sp](const StepRecord& st) {
            if (st.step == 2) sp->post(command::StepOnce{});
        };
        s.add_sink(sink);
        s.start();
        s.wait();
        QCOMPARE(s.state(), SessionState::completed);
        QCOMPARE(s.summary().steps, std::int64_t{15});
        QVERIFY(sink->events_of(EventKind::paused).empty());
    }

    // A paced run takes its steps no faster than the pace, yet its time axis and samples/s leave
    // the waits out (they are not training time); a pace of 0 lifts it at once.
    void paceSpacesTheStepsOutOfTrainingTime() {
        Session s(session_experiment(12));
        auto sink = std::make_shared<CollectingSink>();
        s.add_sink(sink);
        s.post(command::SetPace{20});  // 11 waits of 50 ms between 12 steps
        const auto began = std::chrono::steady_clock::now();
        s.start();
        s.wait();
        const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count();
        QCOMPARE(s.state(), SessionState::completed);
        QVERIFY2(wall >= 0.5, qPrintable(QString("12 steps at 20 a second took %1 s").arg(wall)));
        QVERIFY2(sink->steps.back().time_s < wall - 0.3,
                 qPrintable(QString("time_s %1 of %2 s wall").arg(sink->steps.back().time_s).arg(wall)));
        QVERIFY(sink->events_of(EventKind::paused).empty());

        Session fast(session_experiment(400));
        auto fast_sink = std::make_shared<ScriptedSink>();
        Session* fp = &fast;
        fast_sink->after_step = [fp](const StepRecord& st) {
            if (st.step == 1) fp->post(command::SetPace{0});
        };
        fast.add_sink(fast_sink);
        fast.post(command::SetPace{2});  // one step every 0.5 s, lifted after the second
        const auto fast_began = std::chrono::steady_clock::now();
        fast.start();
        fast.wait();
        const double fast_wall =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - fast_began).count();
        QCOMPARE(fast.summary().steps, std::int64_t{400});
        QVERIFY2(fast_wall < 60, "a pace of 0 lifted the pace");  // 400 steps at 2 a second: 200 s
    }

    // Paused time is not training time: the step after a 1.5 s pause is stamped as if there had
    // been none, the resumed event comes moments after the paused one, and the summary's elapsed
    // time leaves the pause out.
    void pausedTimeIsNotTrainingTime() {
        Session s(session_experiment(10));
        auto sink = std::make_shared<CollectingSink>();
        s.add_sink(sink);
        s.post(command::PauseAt{5});
        s.start();
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
        while (!(s.state() == SessionState::paused && s.summary().steps == 5) &&
               std::chrono::steady_clock::now() < deadline)
            std::this_thread::sleep_for(std::chrono::milliseconds(2));
        QCOMPARE(s.state(), SessionState::paused);
        const auto pause = std::chrono::milliseconds(1500);
        std::this_thread::sleep_for(pause);
        s.post(command::Resume{});
        s.wait();
        QCOMPARE(s.state(), SessionState::completed);
        QCOMPARE(sink->steps.size(), std::size_t{10});
        const double gap = sink->steps[5].time_s - sink->steps[4].time_s;
        QVERIFY2(gap < 0.75, qPrintable(QString("step 5 came %1 s after step 4").arg(gap)));
        const auto paused = sink->events_of(EventKind::paused), resumed = sink->events_of(EventKind::resumed);
        QCOMPARE(paused.size(), std::size_t{1});
        QCOMPARE(resumed.size(), std::size_t{1});
        QVERIFY(resumed[0].time_s - paused[0].time_s < 0.75);  // the pause's 1.5 s left out
        QVERIFY(s.summary().elapsed_s < sink->steps.back().time_s + 0.75);
        QVERIFY(s.summary().elapsed_s >= sink->steps.back().time_s);
    }

    // The summary's training time is the run's clock at its last step (config/throughput.h), the
    // time the store's totals and `mantissa-cli show` give and the samples/s is over: the final
    // evaluation, after the last step, is not in it (the finished event, later, still counts it).
    void trainingTimeIsTheLastStepsClock() {
        Experiment e = session_experiment(25);
        e.dataset.samples = 40000;  // a final evaluation at step 25 that takes a measurable time
        Session s(e);
        auto sink = std::make_shared<CollectingSink>();
        s.add_sink(sink);
        s.start();
        s.wait();
        QCOMPARE(s.state(), SessionState::completed);
        const RunSummary r = s.summary();
        QCOMPARE(r.elapsed_s, sink->steps.back().time_s);
        QCOMPARE(r.samples_per_s, run_samples_per_s(r.samples, r.elapsed_s));
        const auto finished = sink->events_of(EventKind::run_finished);
        QCOMPARE(finished.size(), std::size_t{1});
        QVERIFY(finished[0].time_s > r.elapsed_s);
    }

    void stopWhilePausedAndBeforeStart() {
        Session s(session_experiment(100));
        auto sink = std::make_shared<CollectingSink>();
        s.add_sink(sink);
        s.post(command::Pause{});  // before start: applied before step 0
        s.start();
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
        while (s.state() != SessionState::paused && std::chrono::steady_clock::now() < deadline)
            std::this_thread::sleep_for(std::chrono::milliseconds(5));
        QCOMPARE(s.state(), SessionState::paused);
        s.request_stop();
        s.wait();
        QCOMPARE(s.state(), SessionState::stopped);
        QCOMPARE(s.summary().steps, std::int64_t{0});
        QVERIFY(sink->steps.empty());
        QVERIFY(sink->evals.empty());  // nothing trained, nothing evaluated
    }

    void failureOnTheTrainingThread() {
        Session s(session_experiment(50));
        auto sink = std::make_shared<ScriptedSink>();
        sink->after_step = [](const StepRecord& st) {
            if (st.step == 3) throw Error("the recorder's disk is full");
        };
        s.add_sink(sink);
        s.start();
        s.wait();
        QCOMPARE(s.state(), SessionState::failed);
        const RunSummary r = s.summary();
        QCOMPARE(r.state, SessionState::failed);
        QVERIFY(QString::fromStdString(r.error).contains("disk is full"));
        QCOMPARE(sink->events.back().kind, EventKind::run_failed);
    }

    // Memory running out on the training thread (an allocation in a step): the run fails with a
    // sentence that says so, never the library's "std::bad_alloc".
    void outOfMemoryIsASentence() {
        Session s(session_experiment(50));
        auto sink = std::make_shared<ScriptedSink>();
        sink->after_step = [](const StepRecord& st) {
            if (st.step == 3) throw std::bad_alloc();
        };
        s.add_sink(sink);
        s.start();
        s.wait();
        QCOMPARE(s.state(), SessionState::failed);
        const std::string expected =
            "Not enough memory: an allocation failed while training; use a smaller model or train.batch_size, fewer "
            "threads (backend.threads), or free some memory.";
        QCOMPARE(s.summary().error, expected);
        QCOMPARE(sink->events.back().kind, EventKind::run_failed);
        QCOMPARE(sink->events.back().message, "Run failed: " + expected);
    }

    // The checkpoint folder's parent is a file: the run trains on, and each checkpoint it could
    // not write is a notice that names the folder and why, marked as a failed checkpoint.
    void checkpointFailureIsANotice() {
        QTemporaryDir dir;
        QFile blocker(dir.filePath("checkpoints"));
        QVERIFY(blocker.open(QIODevice::WriteOnly) && blocker.write("x") == 1);
        blocker.close();
        const std::string folder = dir.filePath("checkpoints/run").toStdString();
        Experiment e = session_experiment(10);
        e.train.checkpoint_every = 5;
        Session s(e);
        s.set_checkpoint_folder(folder, "run");
        auto sink = std::make_shared<CollectingSink>();
        s.add_sink(sink);
        s.start();
        s.wait();
        QCOMPARE(s.state(), SessionState::completed);
        std::vector<Event> failed;
        for (const Event& ev : sink->events_of(EventKind::notice))
            if (nlohmann::json::parse(ev.data_json).value("checkpoint", "") == "failed") failed.push_back(ev);
        QCOMPARE(failed.size(), std::size_t{2});  // steps 5 and 10; the end (10) is not tried twice
        QCOMPARE(failed[0].message, "No checkpoint at step 5: the checkpoint folder " + folder +
                                        " cannot be made, because " + dir.filePath("checkpoints").toStdString() +
                                        " is a file, not a folder.");
        QCOMPARE(failed[1].step, std::int64_t{10});
        QVERIFY(sink->events_of(EventKind::checkpoint).empty());
    }

    // The checks a sweep makes before recording anything: what the Session would refuse at its
    // start for the experiment alone, in the same sentence; nothing for what it accepts.
    void startCheckRefusesWhatTheRunWould() {
        Experiment e = session_experiment(5);
        e.precision.layers["fc4"] = LayerPrecision::bf16;
        QString from_check, from_session;
        try {
            check_run_start(e);
        } catch (const Error& err) {
            from_check = err.what();
        }
        try {
            Session refused(e);
        } catch (const Error& err) {
            from_session = err.what();
        }
        QVERIFY(!from_check.isEmpty());
        QCOMPARE(from_check, from_session);
        QCOMPARE(from_check, QString("precision.layers.fc4: the model has no layer \"fc4\" (its layers are fc1..fc3)."));
        e.precision.layers.clear();
        e.precision.layers["fc3"] = LayerPrecision::bf16;
        check_run_start(e);  // no throw
        e.model.hidden = {8};
        QVERIFY_THROWS_EXCEPTION(Error, check_run_start(e));  // fc1, fc2 only
    }

    // backend auto without a usable GPU of the index asked for: the run trains on the CPU and
    // says the device was ignored, before it starts and as an event.
    void ignoredDeviceIsANotice() {
        Experiment e = session_experiment(2);
        e.backend = "auto";
        e.device = 255;
        Session s(e);
        QCOMPARE(QString::fromStdString(s.backend_name()), QString("cpu"));
        QCOMPARE(s.notices(), std::vector<std::string>{"backend.device 255 was ignored: GPU 255 is not usable here "
                                                       "(`mantissa-cli devices` says why), so this run (backend auto) "
                                                       "trains on the CPU."});
        e.device = 0;  // every run's default: nothing to say
        Session quiet(e);
        for (const std::string& n : quiet.notices()) QVERIFY(n.find("backend.device") == std::string::npos);
    }

    void destructorStopsARunningSession() {
        auto sink = std::make_shared<CollectingSink>();
        {
            Session s(session_experiment(100000));
            s.add_sink(sink);
            s.start();
            std::this_thread::sleep_for(std::chrono::milliseconds(50));
        }
        QCOMPARE(sink->events.back().kind, EventKind::run_stopped);
    }

    void badInputIsRefusedAtConstruction() {
        Experiment e = session_experiment(5);
        e.precision.layers["fc4"] = LayerPrecision::bf16;
        QVERIFY_THROWS_EXCEPTION(Error, Session{e});
        e = session_experiment(5);
        e.backend = "cuda";
        bool cuda = false;
        for (const auto& a : backend_availability()) cuda = cuda || (a.name == "cuda" && a.available);
        if (!cuda) QVERIFY_THROWS_EXCEPTION(Error, Session{e});
        e = session_experiment(5);
        e.dataset.kind = "csv";
        e.dataset.path = "/nonexistent/file.csv";
        QVERIFY_THROWS_EXCEPTION(Error, Session{e});
    }

    // A missing Fashion-MNIST falls back to spirals, and the session says why.
    void datasetNoticesArePassedOn() {
        Experiment e = session_experiment(3);
        e.dataset = DatasetSpec{};
        e.dataset.path = "/nonexistent/fashion-mnist";
        Session s(e);
        QVERIFY(!s.notices().empty());
        auto sink = std::make_shared<CollectingSink>();
        s.add_sink(sink);
        s.start();
        s.wait();
        QCOMPARE(s.state(), SessionState::completed);
        QVERIFY(!sink->events_of(EventKind::notice).empty());
        QCOMPARE(sink->events_of(EventKind::notice)[0].message, s.notices()[0]);
    }
};

QTEST_GUILESS_MAIN(TestSession)
#include "test_session.moc"
