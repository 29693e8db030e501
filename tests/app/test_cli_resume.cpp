// mantissa-cli resume and weights, as a person (or a cluster's scheduler) uses them:
// - kills: a run checkpointing every step is killed (SIGKILL) at random moments, over and over,
//   and resumed each time; after every kill the latest checkpoint the store lists loads whole,
//   and no file in the run's checkpoint folder is a half file; when it finally completes, every
//   step's loss and loss scale equal the uninterrupted run's bit for bit;
// - a stopped run resumes as the same run; the refusals (a completed run, --set without --as-new,
//   a step with no checkpoint, a damaged checkpoint, --threads out of range, a run still being
//   recorded with no checkpoint yet) are exit 2 and one sentence;
// - a byte flipped inside a tensor's data of a real checkpoint: resume, a branch from it, weights
//   export and weights show are exit 2 naming the tensor, nothing is recorded and every checkpoint
//   and its file stays; a branch from an earlier checkpoint, one written before checkpoints kept
//   checksums, goes on;
// - a branch records its parent and step and starts at that step with the changed setting (and
//   --threads, as backend.threads);
// - weights export writes the model's tensors of a checkpoint, byte for byte in their dtypes, with
//   no optimizer state, and weights show lists them (tests/engine/weights/test_safetensors.cpp
//   starts runs from such files).
#include <QtTest>

#include <signal.h>

#include <bit>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>
#include <sqlite3.h>

#include "error.h"
#include "checkpoint_edits.h"
#include "run_cli.h"
#include "store/run_store.h"
#include "train/checkpoint.h"
#include "train/trainer.h"
#include "weights/safetensors.h"

using namespace mantissa;

namespace {

// A small run that still takes a few seconds, with state of every kind the recipe carries.
QStringList recipe(int steps) {
    return {"--set", "dataset.kind=spirals", "--set", "model.hidden=[256,256]", "--set", "train.batch_size=64",
            "--set", "train.steps=" + QString::number(steps), "--set", "train.eval_every=40", "--set",
            "precision.autocast=fp16", "--set", "precision.loss_scaling.mode=dynamic", "--set",
            "precision.loss_scaling.growth_interval=20", "--set", "train.layer_stats_every=5", "--set",
            "backend.kind=cpu"};
}

// The recipe trained into `db` with a checkpoint every 10 steps.
CliResult train_checkpointed(const QString& db, int steps) {
    return run_cli(QStringList{"train", "--db", db} + recipe(steps) + QStringList{"--set", "train.checkpoint_every=10"});
}

std::uint32_t bits(double v) { return std::bit_cast<std::uint32_t>(static_cast<float>(v)); }

struct Losses {
    std::vector<std::int64_t> steps;
    std::vector<std::uint32_t> loss, scale;
};

Losses losses_of(const std::string& db, std::int64_t run) {
    RunStore store(db, StoreAccess::read);
    Losses l;
    for (const StepRecord& s : store.steps(run)) {
        l.steps.push_back(s.step);
        l.loss.push_back(bits(s.loss));
        l.scale.push_back(bits(s.loss_scale));
    }
    return l;
}

std::int64_t only_run(const std::string& db) {
    if (!std::filesystem::exists(db)) return -1;  // killed before it made the store
    // Killed while making it: an empty file or an empty database, which reading refuses (reads
    // never create a store); the next attempt's writer makes it.
    if (std::filesystem::file_size(db) == 0) return -1;
    try {
        RunStore store(db, StoreAccess::read);
        const auto runs = store.list_runs();
        return runs.empty() ? -1 : runs.front().id;
    } catch (const mantissa::Error& e) {
        if (std::string(e.what()).find("empty database") != std::string::npos) return -1;
        throw;
    }
}


}  // namespace

class TestCliResume : public QObject {
    Q_OBJECT
private slots:
    void killedAtRandomAndResumedEqualsUninterrupted() {
        QTemporaryDir dir;
        const int steps = 2000;
        const std::string ref_db = dir.filePath("ref.sqlite").toStdString();
        const CliResult ref = run_cli(QStringList{"train", "--db", QString::fromStdString(ref_db)} + recipe(steps));
        QVERIFY2(ref.code == 0, ref.err.constData());
        const Losses expected = losses_of(ref_db, only_run(ref_db));
        QCOMPARE(expected.loss.size(), std::size_t(steps));

        const QString db = dir.filePath("kill.sqlite");
        const std::string db_path = db.toStdString();
        std::mt19937 rng(20261203);
        std::uniform_int_distribution<int> delay_ms(30, 700);
        int kills = 0, resumes = 0;
        bool completed = false;
        for (int attempt = 0; attempt < 200 && !completed; ++attempt) {
            QStringList args;
            const std::int64_t run = only_run(db_path);
            std::int64_t latest = -1;
            if (run >= 0) {
                RunStore store(db_path);  // marks the killed run interrupted
                if (store.run(run).status == RunStatus::completed) {
                    completed = true;  // the kill came after the run recorded its end
                    break;
                }
                const auto cps = store.checkpoints(run);
                if (!cps.empty()) latest = cps.back().step;
            }
            if (run < 0 || latest < 0) {
                if (run >= 0) std::filesystem::remove(db_path);  // killed before its first checkpoint
                args = QStringList{"train", "--db", db} + recipe(steps) + QStringList{"--set", "train.checkpoint_every=1"};
            } else {
                args = {"resume", QString::number(run), "--db", db};
                ++resumes;
            }
            QProcess p;
            p.start(MANTISSA_CLI_PATH, args);
            QVERIFY(p.waitForStarted());
            const bool last_round = kills >= 22;
            if (!last_round && !p.waitForFinished(delay_ms(rng))) {
                ::kill(static_cast<pid_t>(p.processId()), SIGKILL);
                p.waitForFinished();
                ++kills;
            } else {
                p.waitForFinished(300'000);
                QVERIFY2(p.exitStatus() == QProcess::NormalExit && p.exitCode() == 0, p.readAllStandardError().constData());
                completed = true;
            }

            // After the kill: the latest listed checkpoint loads whole, and so does every file in the folder.
            const std::int64_t r = only_run(db_path);
            if (r < 0) continue;
            RunStore store(db_path);
            const auto cps = store.checkpoints(r);
            if (cps.empty()) continue;
            const Checkpoint c(cps.back().file);
            QCOMPARE(c.info().trainer.step, cps.back().step);
            Trainer t(c.info().experiment, load_dataset(c.info().experiment.dataset, c.info().experiment.train.seed),
                      make_backend("cpu", 0));
            c.restore(t);
            QCOMPARE(t.steps_taken(), cps.back().step);
            for (const auto& f : std::filesystem::directory_iterator(std::filesystem::path(cps.back().file).parent_path()))
                if (f.path().extension() == ".safetensors") QCOMPARE(Checkpoint(f.path().string()).info().trainer.step > 0, true);
        }
        QVERIFY(completed);
        QVERIFY2(kills >= 20, std::to_string(kills).c_str());
        QVERIFY(resumes >= 10);
        const std::int64_t run = only_run(db_path);
        RunStore store(db_path, StoreAccess::read);
        QCOMPARE(store.run(run).status, RunStatus::completed);
        QCOMPARE(store.list_runs().size(), std::size_t{1});  // one run, continued
        const Losses got = losses_of(db_path, run);
        QCOMPARE(got.steps, expected.steps);
        QCOMPARE(got.loss, expected.loss);
        QCOMPARE(got.scale, expected.scale);
        QVERIFY(store.checkpoints(run).size() <= 3);  // train.keep_checkpoints
        qInfo("%d kills, %d resumes", kills, resumes);
    }

    void stoppedRunResumesAndBranches() {
        QTemporaryDir dir;
        const QString db = dir.filePath("runs.sqlite");
        const std::string db_path = db.toStdString();
        // A short run that completes with checkpoints at 20, 40 and 60.
        CliResult r = run_cli(QStringList{"train", "--db", db} + recipe(60) + QStringList{"--set", "train.checkpoint_every=20"});
        QVERIFY2(r.code == 0, r.err.constData());
        const std::int64_t run = only_run(db_path);
        {
            RunStore store(db_path, StoreAccess::read);
            const auto cps = store.checkpoints(run);
            QCOMPARE(cps.size(), std::size_t{3});
            QCOMPARE(cps.back().step, std::int64_t{60});
        }

        // A completed run does not continue; --set needs --as-new; no checkpoint at 30.
        r = run_cli({"resume", QString::number(run), "--db", db});
        QCOMPARE(r.code, 2);
        QVERIFY2(r.err.contains("completed its steps"), r.err.constData());
        r = run_cli({"resume", QString::number(run), "--db", db, "--set", "precision.autocast=bf16"});
        QCOMPARE(r.code, 2);
        QVERIFY2(r.err.contains("--as-new"), r.err.constData());
        r = run_cli({"resume", QString::number(run), "--db", db, "--as-new", "--step", "30"});
        QCOMPARE(r.code, 2);
        QVERIFY2(r.err.contains("no checkpoint at step 30") && r.err.contains("20, 40 and 60"), r.err.constData());
        // A branch keeps the checkpoint's model and optimizer: the setting named, not a tensor.
        r = run_cli({"resume", QString::number(run), "--db", db, "--as-new", "--set", "model.hidden=[8]"});
        QCOMPARE(r.code, 2);
        QVERIFY2(r.err.contains("model.hidden cannot change ([256,256] in the checkpoint)"), r.err.constData());
        r = run_cli({"resume", QString::number(run), "--db", db, "--as-new", "--set", "train.optimizer=sgd"});
        QCOMPARE(r.code, 2);
        QVERIFY2(r.err.contains("train.optimizer cannot change"), r.err.constData());
        // The activation keeps the tensors: a branch may change it (one step here).
        r = run_cli({"resume", QString::number(run), "--db", db, "--as-new", "--set", "model.activation=gelu", "--set",
                     "train.steps=61"});
        QVERIFY2(r.code == 0, r.err.constData());

        r = run_cli({"resume", QString::number(run), "--db", db, "--as-new", "--threads", "2000"});
        QCOMPARE(r.code, 2);
        QVERIFY2(r.err.startsWith("mantissa-cli resume: --threads takes a number from 1 to 1024"), r.err.constData());

        // A branch from step 20 in bf16 on one thread, 60 steps long: its steps are 20..59, its
        // parent recorded, its experiment says the thread count.
        r = run_cli({"resume", QString::number(run), "--db", db, "--as-new", "--step", "20", "--set",
                     "precision.autocast=bf16", "--threads", "1", "--json"});
        QVERIFY2(r.code == 0, r.err.constData());
        const auto out = nlohmann::json::parse(r.out.constData());
        const std::int64_t branch = out.at("run_id").get<std::int64_t>();
        // The step it reached, counted from its parent's start, and where it began: the 40 steps
        // the store lists for it are the difference.
        QCOMPARE(out.at("steps").get<std::int64_t>(), std::int64_t{60});
        QCOMPARE(out.at("first_step").get<std::int64_t>(), std::int64_t{20});
        {
            RunStore store(db_path, StoreAccess::read);
            const RunRow b = store.run(branch);
            QCOMPARE(b.parent_uuid, store.run(run).uuid);
            QCOMPARE(b.parent_step, std::optional<std::int64_t>(20));
            const auto s = store.steps(branch);
            QCOMPARE(s.size(), std::size_t{40});
            QCOMPARE(s.front().step, std::int64_t{20});
            QVERIFY(nlohmann::json::parse(b.config_json).at("precision").at("autocast") == "bf16");
            QVERIFY(nlohmann::json::parse(b.config_json).at("backend").at("threads") == 1);
            QVERIFY2(b.device.find("(1 thread, ") != std::string::npos, b.device.c_str());
            QCOMPARE(b.name, store.run(run).name + " @20");
        }

        // weights export: the checkpoint's model tensors byte for byte, no optimizer state.
        const QString weights = dir.filePath("w.safetensors");
        r = run_cli({"weights", "export", QString::number(run), "--step", "40", "-o", weights, "--db", db});
        QVERIFY2(r.code == 0, r.err.constData());
        std::string checkpoint_file;
        {
            RunStore store(db_path, StoreAccess::read);
            checkpoint_file = store.checkpoints(run).at(1).file;
        }
        const SafetensorsFile exported(weights.toStdString()), checkpoint(checkpoint_file);
        std::size_t model_tensors = 0;
        for (const SafetensorsEntry& e : checkpoint.entries()) {
            if (e.name.starts_with("mantissa.")) {
                QVERIFY(!exported.find(e.name));
                continue;
            }
            ++model_tensors;
            const SafetensorsEntry* x = exported.find(e.name);
            QVERIFY2(x, e.name.c_str());
            QCOMPARE(x->dtype, e.dtype);
            QVERIFY(exported.read_bytes(*x) == checkpoint.read_bytes(e));
        }
        QCOMPARE(exported.entries().size(), model_tensors);
        QCOMPARE(exported.metadata().at("mantissa.step"), std::string("40"));
        QVERIFY(exported.metadata().contains("mantissa.experiment"));
        r = run_cli({"weights", "show", weights});
        QVERIFY2(r.code == 0 && r.out.contains("fc1.weight") && r.out.contains("F32"), r.out.constData());

        // A loss scale no run writes (0 without a collapse, negative, beyond FP32), and a checkpoint
        // without its experiment: refused naming the file once and the key, before anything runs.
        {
            const std::filesystem::path saved = dir.filePath("saved.safetensors").toStdString();
            std::filesystem::copy_file(checkpoint_file, saved);
            const auto rewrite = [&](const std::function<void(nlohmann::json&)>& edit) {
                test::rewrite_checkpoint_metadata(saved.string(), checkpoint_file, edit);
            };
            const std::vector<std::pair<std::function<void(nlohmann::json&)>, QByteArray>> damages = {
                {[](nlohmann::json& j) { j["loss_scale"] = 0; }, "\"loss_scale\" is 0 while \"scale_collapsed\" is false"},
                {[](nlohmann::json& j) { j["loss_scale"] = -1.0; }, "\"loss_scale\" must be a finite FP32 number above 0"},
                {[](nlohmann::json& j) { j["loss_scale"] = 1e39; }, "\"loss_scale\" must be a finite FP32 number above 0"},
                {[](nlohmann::json& j) { j.erase("experiment"); }, "the checkpoint's metadata has no \"experiment\""},
            };
            for (const auto& [edit, expected] : damages) {
                rewrite(edit);
                r = run_cli({"resume", QString::number(run), "--db", db, "--as-new", "--step", "40"});
                QCOMPARE(r.code, 2);
                QVERIFY2(r.err.contains(expected), r.err.constData());
                QCOMPARE(r.err.count(QByteArray::fromStdString(checkpoint_file)), 1);
                QCOMPARE(r.err.count('\n'), 1);
            }
            std::filesystem::copy_file(saved, checkpoint_file, std::filesystem::copy_options::overwrite_existing);
        }

        // Damaged files and wrong runs are one sentence each.
        r = run_cli({"weights", "export", "999", "-o", weights, "--db", db});
        QCOMPARE(r.code, 2);
        std::filesystem::resize_file(checkpoint_file, std::filesystem::file_size(checkpoint_file) / 2);
        r = run_cli({"resume", QString::number(run), "--db", db, "--as-new", "--step", "40"});
        QCOMPARE(r.code, 2);
        QVERIFY2(r.err.contains(QByteArray::fromStdString(checkpoint_file)), r.err.constData());
        QCOMPARE(r.err.count('\n'), 1);
        // A checkpoint whose file is gone: the others named, to branch from.
        std::filesystem::remove(checkpoint_file);
        r = run_cli({"resume", QString::number(run), "--db", db, "--as-new", "--step", "40"});
        QCOMPARE(r.code, 2);
        QVERIFY2(r.err.contains("checkpoint at step 40 is missing") && r.err.contains("are at steps 20 and 60"),
                 r.err.constData());
        QCOMPARE(r.err.count('\n'), 1);
    }

    // A checkpoint whose tensor bytes were damaged after it was written (disk, copy, a bit flip):
    // every reader refuses it naming the tensor before anything is recorded, and the run keeps
    // every checkpoint it had (none pruned by a continuation that would have written new ones).
    void damagedCheckpointIsRefusedAndNothingIsLost() {
        QTemporaryDir dir;
        const QString db = dir.filePath("runs.sqlite");
        const std::string db_path = db.toStdString();
        CliResult r = train_checkpointed(db, 40);
        QVERIFY2(r.code == 0, r.err.constData());
        const std::int64_t run = only_run(db_path);
        // As a SIGKILL at step 35 leaves a run: its checkpoints at 20 and 30, its steps to 34, still
        // marked running by a process that is gone; a plain resume would train on from step 30 and
        // write (and prune) checkpoints.
        {
            RunStore store(db_path, StoreAccess::read);
            const std::vector<CheckpointRow> all = store.checkpoints(run);
            QCOMPARE(all.size(), std::size_t{3});
            QCOMPARE(all.back().step, std::int64_t{40});
            std::filesystem::remove(all.back().file);
        }
        sqlite3* raw = nullptr;
        QCOMPARE(sqlite3_open(db_path.c_str(), &raw), SQLITE_OK);
        const std::string id = std::to_string(run);
        const std::string sql =
            "UPDATE runs SET status = 'running', finished_at = NULL, pid = 999999999 WHERE id = " + id +
            "; DELETE FROM checkpoints WHERE run_id = " + id +
            " AND step = 40; DELETE FROM steps "
            "WHERE run_id = " +
            id + " AND step >= 35; DELETE FROM evals WHERE run_id = " + id + " AND step >= 35;";
        QCOMPARE(sqlite3_exec(raw, sql.c_str(), nullptr, nullptr, nullptr), SQLITE_OK);
        sqlite3_close(raw);
        std::vector<CheckpointRow> before;
        std::size_t steps_before = 0;
        {
            RunStore store(db_path);  // marks it interrupted
            QCOMPARE(store.run(run).status, RunStatus::interrupted);
            before = store.checkpoints(run);
            steps_before = store.steps(run).size();
        }
        QCOMPARE(before.size(), std::size_t{2});
        QCOMPARE(steps_before, std::size_t{35});
        const std::string latest = before.back().file;
        std::map<std::string, std::uintmax_t> sizes;
        for (const CheckpointRow& c : before) sizes[c.file] = std::filesystem::file_size(c.file);
        test::flip_a_byte(latest, "fc1.weight");

        const QByteArray sentence = QByteArray::fromStdString(
            latest +
            ": tensor fc1.weight's bytes do not match the checksum written with them; the checkpoint is damaged, "
            "so branch from an earlier one with `mantissa-cli resume RUN --as-new --step S` (`mantissa-cli show "
            "RUN` lists the run's checkpoints).");
        const QString out = dir.filePath("w.safetensors");
        const std::vector<QStringList> refused = {
            {"resume", QString::number(run), "--db", db},
            {"resume", QString::number(run), "--db", db, "--as-new", "--step", "30"},
            {"weights", "export", QString::number(run), "--step", "30", "-o", out, "--db", db},
            {"weights", "show", QString::fromStdString(latest)},
            {"weights", "show", QString::fromStdString(latest), "--json"},
        };
        for (const QStringList& args : refused) {
            r = run_cli(args);
            QVERIFY2(r.code == 2, (args.join(' ') + ": " + QString::fromUtf8(r.err)).toUtf8().constData());
            QVERIFY2(r.err.contains(sentence), r.err.constData());
            QCOMPARE(r.err.count('\n'), 1);
            QVERIFY2(r.out.isEmpty(), r.out.constData());
        }
        QVERIFY(!std::filesystem::exists(out.toStdString()));
        {
            RunStore store(db_path, StoreAccess::read);
            QCOMPARE(store.list_runs().size(), std::size_t{1});  // no branch recorded
            QCOMPARE(store.run(run).status, RunStatus::interrupted);
            QCOMPARE(store.steps(run).size(), steps_before);
            const std::vector<CheckpointRow> after = store.checkpoints(run);
            QCOMPARE(after.size(), before.size());
            for (std::size_t i = 0; i < after.size(); ++i) {
                QCOMPARE(after[i].step, before[i].step);
                QCOMPARE(after[i].file, before[i].file);
                QCOMPARE(std::filesystem::file_size(after[i].file), sizes[after[i].file]);
            }
        }
        // An undamaged checkpoint says so.
        r = run_cli({"weights", "show", QString::fromStdString(before[0].file)});
        QVERIFY2(r.code == 0, r.err.constData());
        QVERIFY2(r.out.contains("every tensor's bytes match the checksum written with them"), r.out.constData());

        // The way out the sentence names: a branch from the checkpoint at step 20, here one written
        // before checkpoints kept checksums (its metadata without them), which still resumes.
        const std::string earlier = before[0].file;
        const std::size_t tensors = SafetensorsFile(earlier).entries().size();
        std::size_t checksums = 0;
        test::rewrite_checkpoint_metadata(earlier, [&](nlohmann::json& j) {
            checksums = j.at("checksums").size();
            j.erase("checksums");
        });
        QCOMPARE(checksums, tensors);
        r = run_cli({"weights", "show", QString::fromStdString(earlier), "--json"});
        QVERIFY2(r.code == 0, r.err.constData());
        QCOMPARE(nlohmann::json::parse(r.out.constData()).at("checksums"), "none");
        r = run_cli(
            {"resume", QString::number(run), "--db", db, "--as-new", "--step", "20", "--set", "train.steps=25"});
        QVERIFY2(r.code == 0, r.err.constData());
        RunStore store(db_path, StoreAccess::read);
        QCOMPARE(store.list_runs().size(), std::size_t{2});
        QCOMPARE(store.checkpoints(run).size(), before.size());
        for (const CheckpointRow& c : before) QVERIFY2(std::filesystem::exists(c.file), c.file.c_str());
    }

    // A store copied away from its checkpoints' folder (under another name, so the folder it
    // names is not its own): rm removes the run and says its files were not found where the
    // store records them, rather than naming a folder that does not exist as where they were
    // left; the original store's files are untouched.
    void rmInACopiedStoreSaysItsCheckpointsAreNotThere() {
        QTemporaryDir dir;
        QVERIFY(QDir(dir.path()).mkdir("copy"));
        const QString db = dir.filePath("s.sqlite");
        CliResult r = train_checkpointed(db, 20);
        QVERIFY2(r.code == 0, r.err.constData());
        const QString copy = dir.filePath("copy/r.sqlite");
        QVERIFY(QFile::copy(db, copy));
        r = run_cli({"rm", "1", "--db", copy});
        QVERIFY2(r.code == 0, r.err.constData());
        QVERIFY2(r.out.contains("checkpoint files were not found where the store records them (" +
                                dir.filePath("copy/s.checkpoints/").toUtf8()),
                 r.out.constData());
        RunStore store(db.toStdString(), StoreAccess::read);
        for (const CheckpointRow& c : store.checkpoints(1)) QVERIFY2(std::filesystem::exists(c.file), c.file.c_str());
    }

    // A checkpoint cut short (a full disk, a copy that stopped) is damaged as much as one with a
    // flipped byte, and gets the same advice, naming what is wrong with the file.
    void checkpointCutShortIsDamaged() {
        QTemporaryDir dir;
        const QString db = dir.filePath("runs.sqlite");
        const std::string db_path = db.toStdString();
        CliResult r = train_checkpointed(db, 30);
        QVERIFY2(r.code == 0, r.err.constData());
        const std::int64_t run = only_run(db_path);
        std::string file;
        {
            RunStore store(db_path, StoreAccess::read);
            file = store.checkpoints(run).front().file;  // step 10
        }
        std::filesystem::resize_file(file, std::filesystem::file_size(file) - 100);
        r = run_cli({"resume", QString::number(run), "--db", db, "--as-new", "--step", "10"});
        QCOMPARE(r.code, 2);
        QVERIFY2(r.err.contains(QByteArray::fromStdString(file + ": tensor ")) && r.err.contains("data_offsets") &&
                     r.err.contains("; the checkpoint is damaged, so branch from an earlier one with `mantissa-cli "
                                    "resume RUN --as-new --step S`"),
                 r.err.constData());
        QCOMPARE(r.err.count('\n'), 1);
        RunStore store(db_path, StoreAccess::read);
        QCOMPARE(store.list_runs().size(), std::size_t{1});  // no branch recorded
    }

    // A run that is still being recorded and has no checkpoint yet: resume says so (not that it
    // was stopped), exit 2, the run left recording.
    void aRunStillRecordingWithoutACheckpointSaysSo() {
        QTemporaryDir dir;
        const QString db = dir.filePath("runs.sqlite");
        QProcess p;
        p.start(MANTISSA_CLI_PATH, QStringList{"train", "--db", db} + recipe(1'000'000) +
                                       QStringList{"--set", "train.checkpoint_every=0", "--threads", "1"});
        QVERIFY(p.waitForStarted());
        std::int64_t run = -1;
        for (int i = 0; i < 600 && run < 0; ++i) {
            std::this_thread::sleep_for(std::chrono::milliseconds(50));
            try {
                run = only_run(db.toStdString());
            } catch (const Error&) {
                // the file made, its tables not yet: asked again
            }
        }
        QVERIFY2(run >= 0, "the run never appeared in the store");
        const CliResult r = run_cli({"resume", QString::number(run), "--db", db});
        const bool still_running = p.state() == QProcess::Running;
        ::kill(static_cast<pid_t>(p.processId()), SIGTERM);
        QVERIFY(p.waitForFinished(60'000));
        QVERIFY(still_running);
        QCOMPARE(r.code, 2);
        QVERIFY2(r.err.contains("is still being recorded by process"), r.err.constData());
        QVERIFY2(r.err.contains("has no checkpoint yet"), r.err.constData());
        QCOMPARE(r.err.trimmed().count('\n'), 0);
    }

    // A run killed after it wrote the checkpoint at its last step, before it recorded its end (the
    // random kills above land there now and then): continuing it records the end, the final
    // evaluation as the run would have made it, and the run completed; a branch there is refused.
    void runKilledAtItsLastCheckpointContinuesToItsEnd() {
        QTemporaryDir dir;
        const QString db = dir.filePath("runs.sqlite");
        const std::string db_path = db.toStdString();
        CliResult r = run_cli(QStringList{"train", "--db", db} + recipe(50) + QStringList{"--set", "train.checkpoint_every=25"});
        QVERIFY2(r.code == 0, r.err.constData());
        const std::int64_t run = only_run(db_path);
        const Losses before = losses_of(db_path, run);
        std::vector<EvalRecord> evals_before;
        {
            RunStore store(db_path, StoreAccess::read);
            evals_before = store.evals(run);
            QCOMPARE(store.checkpoints(run).back().step, std::int64_t{50});
            QCOMPARE(evals_before.back().step, std::int64_t{50});  // the end's evaluation, after the checkpoint
        }
        // What a SIGKILL right after the last checkpoint leaves: the run still marked running, by a
        // process that is gone, its end unrecorded.
        sqlite3* raw = nullptr;
        QCOMPARE(sqlite3_open(db_path.c_str(), &raw), SQLITE_OK);
        const std::string sql = "UPDATE runs SET status = 'running', finished_at = NULL, pid = 999999999 WHERE id = " +
                                std::to_string(run) + "; DELETE FROM evals WHERE run_id = " + std::to_string(run) +
                                " AND step = 50;";
        QCOMPARE(sqlite3_exec(raw, sql.c_str(), nullptr, nullptr, nullptr), SQLITE_OK);
        sqlite3_close(raw);
        QCOMPARE(RunStore(db_path).run(run).status, RunStatus::interrupted);

        r = run_cli({"resume", QString::number(run), "--db", db, "--as-new"});
        QCOMPARE(r.code, 2);
        QVERIFY2(r.err.contains("the end of the branch's 50 steps") && r.err.contains("train.steps"), r.err.constData());

        r = run_cli({"resume", QString::number(run), "--db", db});
        QVERIFY2(r.code == 0, r.err.constData());
        QVERIFY2(r.out.contains("had taken all its 50 steps when it ended (interrupted); recording its end"),
                 r.out.constData());
        RunStore store(db_path, StoreAccess::read);
        QCOMPARE(store.run(run).status, RunStatus::completed);
        const Losses after = losses_of(db_path, run);
        QCOMPARE(after.steps, before.steps);
        QCOMPARE(after.loss, before.loss);
        const std::vector<EvalRecord> evals_after = store.evals(run);
        QCOMPARE(evals_after.size(), evals_before.size());
        QCOMPARE(evals_after.back().step, std::int64_t{50});
        QCOMPARE(bits(evals_after.back().loss), bits(evals_before.back().loss));
        QCOMPARE(bits(evals_after.back().accuracy), bits(evals_before.back().accuracy));
    }

    void interruptedRunContinuesAsTheSameRun() {
        QTemporaryDir dir;
        const QString db = dir.filePath("runs.sqlite");
        const std::string db_path = db.toStdString();
        // SIGTERM stops the run after its current step; the stop writes a checkpoint there.
        QProcess p;
        p.start(MANTISSA_CLI_PATH, QStringList{"train", "--db", db} + recipe(100000));
        QVERIFY(p.waitForStarted());
        for (int i = 0; i < 200; ++i) {
            std::this_thread::sleep_for(std::chrono::milliseconds(50));
            try {
                if (only_run(db_path) >= 0 && !RunStore(db_path, StoreAccess::read).steps(only_run(db_path)).empty()) break;
            } catch (const Error&) {
                // the file made, its tables not yet: asked again
            }
        }
        ::kill(static_cast<pid_t>(p.processId()), SIGTERM);
        QVERIFY(p.waitForFinished(60'000));
        const std::int64_t run = only_run(db_path);
        std::int64_t stopped_at = 0;
        {
            RunStore store(db_path, StoreAccess::read);
            QCOMPARE(store.run(run).status, RunStatus::stopped);
            stopped_at = store.checkpoints(run).back().step;
            QCOMPARE(std::int64_t(store.steps(run).size()), stopped_at);
        }
        QProcess again;
        again.start(MANTISSA_CLI_PATH, {"resume", QString::number(run), "--db", db});
        QVERIFY(again.waitForStarted());
        std::this_thread::sleep_for(std::chrono::milliseconds(1500));
        ::kill(static_cast<pid_t>(again.processId()), SIGTERM);
        QVERIFY(again.waitForFinished(60'000));
        QVERIFY2(again.readAllStandardOutput().contains("Resuming run"), "no resume line");
        RunStore store(db_path, StoreAccess::read);
        QCOMPARE(store.list_runs().size(), std::size_t{1});
        const auto s = store.steps(run);
        QVERIFY(std::int64_t(s.size()) > stopped_at);
        for (std::size_t i = 0; i < s.size(); ++i) QCOMPARE(s[i].step, std::int64_t(i));  // no gap, no repeat
        std::int64_t started = 0;
        for (const Event& e : store.events(run)) started += e.kind == EventKind::run_started;
        QCOMPARE(started, std::int64_t{2});
    }
};

QTEST_GUILESS_MAIN(TestCliResume)
#include "test_cli_resume.moc"
