// Checkpoints (engine/train/checkpoint.h):
// - a run checkpointed after k steps and resumed in a new Trainer takes the same steps as the run
//   that never stopped, bit for bit (loss, loss scale, skips, final weights and optimizer state),
//   in recipes that carry state of every kind: AdamW and SGD with momentum, dynamic loss scaling
//   with overflows, FP8 delayed scaling, Kahan and stochastic rounding, batch norm, a live change
//   made before the checkpoint, a transformer;
// - a resumed run takes the matmul path of bf16 operands its checkpoint's run took (the CPU's
//   oneDNN bf16 or FP32 primitive, which sum in different orders), whatever this process chose;
// - a branch with changed settings starts from the checkpoint's weights;
// - damaged and foreign files are refused with one sentence naming the file: among them a byte
//   flipped inside a tensor's data, which the CRC-32 written with each tensor finds before
//   anything is restored (a DamagedCheckpointError, its sentence with no front end's advice), and
//   checksums that do not name each tensor once;
// - a checkpoint written before checksums were kept still resumes;
// - a Session writes checkpoints every train.checkpoint_every steps and at its end, tells its
//   sinks after the rows of the steps before, and a Session resumed from one continues the run,
//   restoring from the Checkpoint its caller opened and checked (not opening the path again: a
//   damaged file renamed over it after it was opened goes unread).
#include <QtTest>

#include <bit>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "backend/backend.h"
#include "backend/cpu/cpu_matmul.h"
#include "checkpoint_edits.h"
#include "error.h"
#include "stripes_dataset.h"
#include "tiny_gpt.h"
#include "train/checkpoint.h"
#include "train/session.h"
#include "train/trainer.h"
#include "weights/state_dict.h"
#include "train_support.h"

using namespace mantissa;
using mantissa::test::flip_a_byte;
using mantissa::test::rewrite_checkpoint_metadata;
using test::quick_experiment;

namespace {

struct Recipe {
    Experiment experiment;
    std::function<Dataset()> data;
    // A live change made before the checkpoint, at the given step (-1: none).
    std::int64_t change_at = -1;
    std::function<void(Trainer&)> change;
};

struct Trace {
    std::vector<std::uint32_t> losses, scales;  // bit patterns
    std::vector<bool> skipped;
    std::vector<std::vector<float>> tensors;    // the final parameters and optimizer state
};

std::uint32_t bits(double v) { return std::bit_cast<std::uint32_t>(static_cast<float>(v)); }

std::unique_ptr<Trainer> make_trainer(const Experiment& e, Dataset data) {
    return std::make_unique<Trainer>(e, std::move(data), make_backend("cpu", 0));
}

void run_steps(Trainer& t, const Recipe& r, std::int64_t until, Trace& trace) {
    while (t.steps_taken() < until) {
        if (t.steps_taken() == r.change_at && r.change) r.change(t);
        const StepReport& s = t.step();
        trace.losses.push_back(bits(s.step.loss));
        trace.scales.push_back(bits(s.step.loss_scale));
        trace.skipped.push_back(s.step.skipped);
    }
}

void final_tensors(Trainer& t, Trace& trace) {
    for (const NetworkParameter& p : t.network().parameters()) trace.tensors.push_back(t.network().read(*p.tensors.value));
    for (const OptimizerStateTensor& s : t.optimizer().state_tensors()) trace.tensors.push_back(t.network().read(*s.tensor));
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
    return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

std::string temp_path(const QTemporaryDir& dir, const char* name) { return dir.filePath(name).toStdString(); }


Recipe mlp_recipe() {
    Recipe r;
    r.experiment = quick_experiment(24);
    r.experiment.dataset.kind = "spirals";
    r.data = [e = r.experiment] { return load_dataset(e.dataset, e.train.seed); };
    return r;
}

}  // namespace

class TestCheckpoint : public QObject {
    Q_OBJECT
private slots:
    void resumedRunEqualsUninterrupted_data() {
        QTest::addColumn<int>("recipe");
        QTest::newRow("adamw fp16 autocast, dynamic scaling, overflows") << 0;
        QTest::newRow("sgd momentum, bf16 weights without masters, kahan") << 1;
        QTest::newRow("fp8 delayed scaling, amax history") << 2;
        QTest::newRow("stochastic rounding of gradients and weights") << 3;
        QTest::newRow("cnn with batch norm, a live change before") << 4;
        QTest::newRow("transformer on text") << 5;
    }
    void resumedRunEqualsUninterrupted() {
        QFETCH(int, recipe);
        QTemporaryDir dir;
        Recipe r = mlp_recipe();
        Experiment& e = r.experiment;
        switch (recipe) {
        case 0:
            e.precision.autocast = Autocast::fp16;
            e.precision.loss_scaling.mode = LossScalingMode::dynamic;
            e.precision.loss_scaling.init_scale = 1e30;  // overflows at first: backoffs and skips
            e.precision.loss_scaling.growth_interval = 3;  // and growth after
            break;
        case 1:
            e.train.optimizer = OptimizerKind::sgd;
            e.train.momentum = 0.9;
            e.train.lr = 0.05;
            e.precision.master_weights = false;
            e.precision.layers["fc1"] = LayerPrecision::bf16;
            e.precision.rounding.weights = WeightRounding::kahan;
            break;
        case 2:
            e.precision.layers["fc2"] = LayerPrecision::fp8_e4m3;
            e.precision.fp8.amax_history_len = 4;
            break;
        case 3:
            e.precision.autocast = Autocast::bf16;
            e.precision.master_weights = false;
            e.precision.rounding.gradients = GradientRounding::stochastic;
            e.precision.rounding.weights = WeightRounding::stochastic;
            break;
        case 4:
            e = quick_experiment(24, {16});
            e.model.kind = "cnn";
            e.model.channels = {4, 8};
            e.train.batch_size = 32;
            e.train.lr = 0.01;
            r.data = [] { return test_support::stripes(256, 64, 3); };
            r.change_at = 5;
            r.change = [](Trainer& t) { t.set_autocast(Autocast::bf16); };
            break;
        case 5: {
            const std::string text = temp_path(dir, "corpus.txt");
            {
                std::ofstream out(text);
                for (int i = 0; i < 40; ++i) out << "the cat sat on the mat; the dog sat on the log.\n";
            }
            e = test::tiny_gpt_experiment(text);
            e.train.batch_size = 4;
            e.train.steps = 16;
            e.train.eval_every = 0;
            e.train.lr = 3e-3;
            e.precision.autocast = Autocast::bf16;
            r.data = [e] { return load_dataset(e.dataset, e.train.seed); };
            break;
        }
        }
        const std::int64_t total = e.train.steps, at = total / 2 - 1;

        Trace whole;
        auto uninterrupted = make_trainer(e, r.data());
        run_steps(*uninterrupted, r, total, whole);
        final_tensors(*uninterrupted, whole);

        Trace first, second;
        auto before = make_trainer(e, r.data());
        run_steps(*before, r, at, first);
        const std::string path = temp_path(dir, "ckpt.safetensors");
        write_checkpoint(*before, path, "uuid-1", {});
        const Checkpoint c(path);
        QCOMPARE(c.info().trainer.step, at);
        QCOMPARE(c.info().run_uuid, std::string("uuid-1"));
        QCOMPARE(c.info().experiment, before->settings());  // the live change is in it
        if (r.change_at >= 0 && r.change_at < at) QVERIFY(!(c.info().experiment == e));
        auto after = make_trainer(c.info().experiment, r.data());
        c.restore(*after);
        QCOMPARE(after->steps_taken(), at);
        Recipe rest = r;
        rest.change = nullptr;  // made before the checkpoint: it is in the experiment
        run_steps(*after, rest, total, second);
        final_tensors(*after, second);

        first.losses.insert(first.losses.end(), second.losses.begin(), second.losses.end());
        first.scales.insert(first.scales.end(), second.scales.begin(), second.scales.end());
        first.skipped.insert(first.skipped.end(), second.skipped.begin(), second.skipped.end());
        QCOMPARE(first.losses, whole.losses);
        QCOMPARE(first.scales, whole.scales);
        QCOMPARE(first.skipped, whole.skipped);
        QCOMPARE(second.tensors.size(), whole.tensors.size());
        for (std::size_t i = 0; i < whole.tensors.size(); ++i) QVERIFY2(same_bits(second.tensors[i], whole.tensors[i]), std::to_string(i).c_str());
        if (recipe == 0) {
            bool skipped = false;
            for (bool s : whole.skipped) skipped = skipped || s;
            QVERIFY(skipped);  // the recipe did exercise the scaler
        }
    }

    // The path is set on the backend before the first step (as MANTISSA_CPU_BF16_MATMUL or the
    // measurement would), the resuming trainer's set to the other one.
    void resumeTakesTheCheckpointsMatmulPath_data() {
        QTest::addColumn<QString>("path");
        QTest::newRow("oneDNN bf16") << "bf16";
        QTest::newRow("FP32 on bf16 values") << "fp32";
    }
    void resumeTakesTheCheckpointsMatmulPath() {
        QFETCH(QString, path);
        QTemporaryDir dir;
        Recipe r = mlp_recipe();
        r.experiment.model.hidden = {256, 256};  // long enough sums that the two paths' orders differ
        r.experiment.precision.autocast = Autocast::bf16;
        const std::int64_t total = r.experiment.train.steps, at = total / 2;
        auto on_path = [&](const std::string& p) {
            auto t = make_trainer(r.experiment, r.data());
            t->backend().set_bf16_matmul_path(p);
            return t;
        };
        Trace whole, first, second;
        auto uninterrupted = on_path(path.toStdString());
        const std::string taken = uninterrupted->backend().bf16_matmul_path();  // "fp32" where no bf16 matmul
        QVERIFY(taken == "fp32" || taken == path.toStdString());
        run_steps(*uninterrupted, r, total, whole);
        final_tensors(*uninterrupted, whole);
        if (CpuMatmul::bf16_available()) {
            // The other path ends with other bits (in the weights and AdamW's state; the losses of
            // so small a model come out equal), so a resume on the wrong path fails below.
            Trace other;
            auto t = on_path(taken == "bf16" ? "fp32" : "bf16");
            run_steps(*t, r, total, other);
            final_tensors(*t, other);
            bool differ = false;
            for (std::size_t i = 0; i < whole.tensors.size(); ++i)
                differ = differ || !same_bits(other.tensors[i], whole.tensors[i]);
            QVERIFY(differ);
        }

        auto before = on_path(taken);
        run_steps(*before, r, at, first);
        const std::string file = temp_path(dir, "ckpt.safetensors");
        write_checkpoint(*before, file, "", {});
        const Checkpoint c(file);
        QCOMPARE(c.info().trainer.bf16_matmul, taken);
        auto after = on_path(taken == "bf16" ? "fp32" : "bf16");
        c.restore(*after);
        QCOMPARE(after->backend().bf16_matmul_path(), taken);
        const std::string named = taken == "bf16" ? "bf16 matmul: oneDNN bf16" : "bf16 matmul: FP32 on bf16 values";
        QVERIFY(after->backend().device_name().find(named) != std::string::npos);
        run_steps(*after, r, total, second);
        final_tensors(*after, second);
        first.losses.insert(first.losses.end(), second.losses.begin(), second.losses.end());
        QCOMPARE(first.losses, whole.losses);
        for (std::size_t i = 0; i < whole.tensors.size(); ++i)
            QVERIFY2(same_bits(second.tensors[i], whole.tensors[i]), std::to_string(i).c_str());

        // A checkpoint from before the path was kept (no "bf16_matmul") leaves the backend's own.
        nlohmann::json j = nlohmann::json::parse(c.file().metadata().at("mantissa.checkpoint"));
        j.erase("bf16_matmul");
        std::vector<SafetensorsTensor> tensors;
        for (const SafetensorsEntry& e : c.file().entries())
            tensors.push_back({e.name, e.dtype, e.shape, c.file().read_bytes(e)});
        std::map<std::string, std::string> meta = c.file().metadata();
        meta["mantissa.checkpoint"] = j.dump();
        const std::string old_file = temp_path(dir, "old.safetensors");
        write_safetensors(old_file, tensors, meta);
        const Checkpoint old(old_file);
        QCOMPARE(old.info().trainer.bf16_matmul, std::string());
        auto fresh = make_trainer(r.experiment, r.data());
        const std::string own = fresh->backend().bf16_matmul_path();
        old.restore(*fresh);
        QCOMPARE(fresh->backend().bf16_matmul_path(), own);
    }

    void checkpointFileIsAStateDictWithState() {
        QTemporaryDir dir;
        Recipe r = mlp_recipe();
        auto t = make_trainer(r.experiment, r.data());
        for (int i = 0; i < 3; ++i) t->step();
        const std::string path = temp_path(dir, "c.safetensors");
        write_checkpoint(*t, path, "", {});
        const SafetensorsFile f(path);
        QVERIFY(f.find("fc1.weight"));
        QVERIFY(f.find("mantissa.optimizer.fc1.weight.exp_avg"));
        QVERIFY(f.find("mantissa.optimizer.fc1.bias.exp_avg_sq"));
        QCOMPARE(f.metadata().at("format"), std::string("pt"));
        // A CRC-32 for every tensor, of its bytes as the file holds them.
        const Checkpoint c(path);
        QVERIFY(c.info().checksums);
        QCOMPARE(c.info().checksums->size(), f.entries().size());
        for (const SafetensorsEntry& e : f.entries())
            QCOMPARE(c.info().checksums->at(e.name), crc32_of(f.read_bytes(e)));
        // The model's part loads as weights into a fresh network of the same model.
        auto other = make_trainer(r.experiment, r.data());
        load_state_dict(other->network(), f, "mantissa.");
        QVERIFY(same_bits(other->network().read(other->network().weight(0)), t->network().read(t->network().weight(0))));
    }

    void branchStartsFromTheCheckpointsWeights() {
        QTemporaryDir dir;
        Recipe r = mlp_recipe();
        auto t = make_trainer(r.experiment, r.data());
        for (int i = 0; i < 5; ++i) t->step();
        const std::string path = temp_path(dir, "c.safetensors");
        write_checkpoint(*t, path, "", {});
        const Checkpoint c(path);
        Experiment branch = c.info().experiment;
        branch.precision.autocast = Autocast::fp16;
        branch.precision.loss_scaling.mode = LossScalingMode::dynamic;
        auto b = make_trainer(branch, r.data());
        c.restore(*b);
        QCOMPARE(b->steps_taken(), std::int64_t{5});
        // Loss scaling turned on: it starts at its init_scale, as a live change would.
        QCOMPARE(b->scaler().scale(), static_cast<float>(branch.precision.loss_scaling.init_scale));
        QVERIFY(same_bits(b->network().read(b->network().weight(1)), t->network().read(t->network().weight(1))));
        const StepReport& s = b->step();
        QCOMPARE(s.step.step, std::int64_t{5});
        QVERIFY(std::isfinite(s.step.loss));
        // An optimizer the checkpoint did not keep state for is refused, naming the tensor.
        Experiment sgd = c.info().experiment;
        sgd.train.optimizer = OptimizerKind::sgd;
        auto s2 = make_trainer(sgd, r.data());
        try {
            c.restore(*s2);
            QFAIL("restored AdamW state into SGD");
        } catch (const Error& e) {
            QVERIFY2(std::string(e.what()).find("no tensor mantissa.optimizer.fc1.weight.momentum_buffer") != std::string::npos, e.what());
        }
    }

    void badFilesAreRefused_data() {
        QTest::addColumn<int>("damage");
        QTest::addColumn<QString>("expected");
        // Cut short (a full disk, a copy that stopped): not a well-formed file, so damaged too.
        QTest::newRow("truncated") << 0 << "; the checkpoint is damaged.";
        QTest::newRow("weights file, no checkpoint metadata") << 1 << "holds no Mantissa checkpoint";
        QTest::newRow("newer version") << 2 << "newer than the 1 this Mantissa reads";
        QTest::newRow("metadata not JSON") << 3 << "is not a JSON object";
        QTest::newRow("a key missing") << 4 << "has no \"optimizer_steps\"";
        QTest::newRow("another model") << 5 << "fc1.weight";
        QTest::newRow("unknown bf16 matmul path") << 6 << "\"bf16_matmul\" must be";
        // Values no run writes, each named with its key (a resumed run would skip every step at
        // scale 0, or scale its losses by a negative number).
        QTest::newRow("loss scale 0, not collapsed") << 7 << "\"loss_scale\" is 0 while \"scale_collapsed\" is false";
        QTest::newRow("loss scale negative") << 8 << "\"loss_scale\" must be a finite FP32 number above 0, not -1";
        QTest::newRow("loss scale beyond FP32") << 9 << "\"loss_scale\" must be a finite FP32 number above 0, not 1e+39";
        QTest::newRow("loss scale inf") << 10 << "\"loss_scale\" must be a finite FP32 number above 0, not inf";
        QTest::newRow("loss scale nan") << 11 << "\"loss_scale\" must be a finite FP32 number above 0, not nan";
        QTest::newRow("growth tracker beyond the steps") << 12 << "\"growth_tracker\" counts more steps than \"step\" (1)";
        QTest::newRow("overflow steps beyond the steps") << 13 << "\"summary.overflow_steps\" is 5, beyond \"step\" (1)";
        QTest::newRow("accuracy above 1") << 14 << "\"summary.test_accuracy\" must be a fraction from 0 to 1";
        QTest::newRow("no experiment") << 15 << ": the checkpoint's metadata has no \"experiment\"; the file is damaged";
        QTest::newRow("nested too deep") << 16 << "is nested 513 levels deep";
        // Checksums: one whole number of 32 bits for each tensor of the file, nothing else.
        QTest::newRow("checksums not an object")
            << 17 << "metadata \"checksums\" must be an object of each tensor's CRC-32; the file is damaged";
        QTest::newRow("a tensor without a checksum")
            << 18 << "metadata \"checksums\" has none for tensor fc1.bias; the file is damaged";
        QTest::newRow("a checksum of no tensor")
            << 19 << "\"checksums\" names fc9.weight, which is not a tensor of the file";
        QTest::newRow("a checksum that is text")
            << 20 << "\"checksums\" of tensor fc1.weight must be a CRC-32, a whole number from 0 to 4294967295";
        QTest::newRow("a checksum below 0") << 21 << "\"checksums\" of tensor fc1.weight must be a CRC-32";
        QTest::newRow("a checksum beyond 32 bits") << 22 << "\"checksums\" of tensor fc1.weight must be a CRC-32";
        // Damaged bytes: found before anything is restored, the tensor named.
        QTest::newRow("a weight's byte flipped")
            << 23
            << ": tensor fc1.weight's bytes do not match the checksum written with them; the checkpoint is damaged.";
        QTest::newRow("optimizer state's byte flipped")
            << 24
            << "tensor mantissa.optimizer.fc1.bias.exp_avg_sq's bytes do not match the checksum written with them; the "
               "checkpoint is damaged";
        QTest::newRow("a checksum changed")
            << 25 << "tensor fc2.bias's bytes do not match the checksum written with them";
        QTest::newRow("two tensors damaged") << 26
                                             << "tensor fc1.weight's bytes do not match the checksum written with them "
                                                "(nor do those of 1 other tensor); the checkpoint is damaged";
        QTest::newRow("cut to its first 5 bytes")
            << 27 << ": it is 5 bytes long, too short for a safetensors file, whose header's length alone takes 8 bytes; "
                     "the checkpoint is damaged.";
    }
    void badFilesAreRefused() {
        QFETCH(int, damage);
        QFETCH(QString, expected);
        QTemporaryDir dir;
        Recipe r = mlp_recipe();
        auto t = make_trainer(r.experiment, r.data());
        t->step();
        const std::string path = temp_path(dir, "c.safetensors");
        write_checkpoint(*t, path, "", {});
        auto rewrite_metadata = [&](const std::function<void(nlohmann::json&)>& edit, bool raw = false) {
            const SafetensorsFile f(path);
            std::vector<SafetensorsTensor> tensors;
            for (const SafetensorsEntry& e : f.entries())
                tensors.push_back({e.name, e.dtype, e.shape, f.read_bytes(e)});
            std::map<std::string, std::string> meta = f.metadata();
            if (raw) meta["mantissa.checkpoint"] = "{not json";
            else {
                nlohmann::json j = nlohmann::json::parse(meta["mantissa.checkpoint"]);
                edit(j);
                meta["mantissa.checkpoint"] = j.dump();
            }
            write_safetensors(path, tensors, meta);
        };
        Experiment model = r.experiment;
        switch (damage) {
        case 0: std::filesystem::resize_file(path, std::filesystem::file_size(path) - 100); break;
        case 1: save_state_dict(t->network(), path); break;
        case 2: rewrite_metadata([](nlohmann::json& j) { j["version"] = 2; }); break;
        case 3: rewrite_metadata(nullptr, true); break;
        case 4: rewrite_metadata([](nlohmann::json& j) { j.erase("optimizer_steps"); }); break;
        case 5: model.model.hidden = {16, 32}; break;
        case 6: rewrite_metadata([](nlohmann::json& j) { j["bf16_matmul"] = "amx"; }); break;
        case 7: rewrite_metadata([](nlohmann::json& j) { j["loss_scale"] = 0; }); break;
        case 8: rewrite_metadata([](nlohmann::json& j) { j["loss_scale"] = -1.0; }); break;
        case 9: rewrite_metadata([](nlohmann::json& j) { j["loss_scale"] = 1e39; }); break;
        case 10: rewrite_metadata([](nlohmann::json& j) { j["loss_scale"] = "inf"; }); break;
        case 11: rewrite_metadata([](nlohmann::json& j) { j["loss_scale"] = "nan"; }); break;
        case 12: rewrite_metadata([](nlohmann::json& j) { j["growth_tracker"] = 2; }); break;
        case 13: rewrite_metadata([](nlohmann::json& j) { j["summary"]["overflow_steps"] = 5; }); break;
        case 14: rewrite_metadata([](nlohmann::json& j) { j["summary"]["test_accuracy"] = 2; }); break;
        case 15: rewrite_metadata([](nlohmann::json& j) { j.erase("experiment"); }); break;
        case 16:
            rewrite_metadata([](nlohmann::json& j) {
                nlohmann::json deep = nlohmann::json::array();
                for (int i = 0; i < 600; ++i) deep = nlohmann::json::array({std::move(deep)});
                j["experiment"]["model"]["layers"] = std::move(deep);
            });
            break;
        case 17: rewrite_metadata([](nlohmann::json& j) { j["checksums"] = 5; }); break;
        case 18: rewrite_metadata([](nlohmann::json& j) { j["checksums"].erase("fc1.bias"); }); break;
        case 19: rewrite_metadata([](nlohmann::json& j) { j["checksums"]["fc9.weight"] = 1; }); break;
        case 20: rewrite_metadata([](nlohmann::json& j) { j["checksums"]["fc1.weight"] = "abc"; }); break;
        case 21: rewrite_metadata([](nlohmann::json& j) { j["checksums"]["fc1.weight"] = -1; }); break;
        case 22: rewrite_metadata([](nlohmann::json& j) { j["checksums"]["fc1.weight"] = 4294967296u; }); break;
        case 23: flip_a_byte(path, "fc1.weight"); break;
        case 24: flip_a_byte(path, "mantissa.optimizer.fc1.bias.exp_avg_sq"); break;
        case 25:
            rewrite_metadata([](nlohmann::json& j) {
                j["checksums"]["fc2.bias"] = j["checksums"]["fc2.bias"].get<std::uint32_t>() ^ 0x80000000u;
            });
            break;
        case 26:
            flip_a_byte(path, "fc1.weight");
            flip_a_byte(path, "fc2.weight");
            break;
        case 27: std::filesystem::resize_file(path, 5); break;
        }
        try {
            const Checkpoint c(path);
            auto other = make_trainer(model, r.data());
            c.restore(*other);
            QFAIL("accepted a bad checkpoint");
        } catch (const Error& e) {
            const std::string what = e.what();
            QVERIFY2(what.find(path) != std::string::npos, what.c_str());
            QVERIFY2(what.find(path, what.find(path) + 1) == std::string::npos, what.c_str());  // named once
            QVERIFY2(what.find(expected.toStdString()) != std::string::npos, what.c_str());
            // Bytes that do not match their checksums, or a file cut short, are a
            // DamagedCheckpointError, whose sentence ends at what is wrong: what to do is the
            // CLI's or the GUI's to add, in its own terms.
            const auto* damaged = dynamic_cast<const DamagedCheckpointError*>(&e);
            QCOMPARE(damaged != nullptr, damage == 0 || damage >= 23);
            if (damaged) {
                QVERIFY2(what.ends_with("; the checkpoint is damaged."), what.c_str());
                QVERIFY2(what.find("mantissa-cli") == std::string::npos, what.c_str());
                QCOMPARE(damaged->with_advice("do this"), what.substr(0, what.size() - 1) + ", so do this.");
            }
        }
    }

    // A dynamic scale that backed off past FP32's smallest subnormal is 0, and the run said it
    // collapsed: such a checkpoint is read (a branch with other loss scaling starts from it).
    void collapsedScaleOfZeroIsRead() {
        QTemporaryDir dir;
        Recipe r = mlp_recipe();
        auto t = make_trainer(r.experiment, r.data());
        t->step();
        const std::string path = temp_path(dir, "c.safetensors");
        write_checkpoint(*t, path, "", {});
        {
            const SafetensorsFile f(path);
            std::vector<SafetensorsTensor> tensors;
            for (const SafetensorsEntry& e : f.entries()) tensors.push_back({e.name, e.dtype, e.shape, f.read_bytes(e)});
            std::map<std::string, std::string> meta = f.metadata();
            nlohmann::json j = nlohmann::json::parse(meta["mantissa.checkpoint"]);
            j["loss_scale"] = 0;
            j["scale_collapsed"] = true;
            meta["mantissa.checkpoint"] = j.dump();
            write_safetensors(path, tensors, meta);
        }
        const Checkpoint c(path);
        QCOMPARE(c.info().trainer.loss_scale, 0.0f);
        QVERIFY(c.info().trainer.scale_collapsed);
    }

    // A checkpoint written before checksums were kept (no "checksums" in its metadata) resumes as
    // it did: the same next step as the run that wrote it.
    void checkpointWithoutChecksumsStillResumes() {
        QTemporaryDir dir;
        Recipe r = mlp_recipe();
        auto t = make_trainer(r.experiment, r.data());
        for (int i = 0; i < 4; ++i) t->step();
        const std::string path = temp_path(dir, "old.safetensors");
        write_checkpoint(*t, path, "", {});
        rewrite_checkpoint_metadata(path, [](nlohmann::json& j) {
            QVERIFY(j.contains("checksums"));
            j.erase("checksums");
        });
        const Checkpoint c(path);
        QVERIFY(!c.info().checksums);
        auto resumed = make_trainer(c.info().experiment, r.data());
        c.restore(*resumed);
        QCOMPARE(resumed->steps_taken(), std::int64_t{4});
        const double expected = t->step().step.loss;
        QCOMPARE(bits(resumed->step().step.loss), bits(expected));
        // Written again, it has them.
        write_checkpoint(*resumed, path, "", {});
        QVERIFY(Checkpoint(path).info().checksums);
    }

    void sessionWritesCheckpointsAndResumes() {
        QTemporaryDir dir;
        const std::string folder = temp_path(dir, "run");
        Experiment e = quick_experiment(30);
        e.dataset.kind = "spirals";
        e.train.checkpoint_every = 10;
        e.train.eval_every = 15;

        // Order of what the sinks see: every step before a checkpoint, then the checkpoint.
        struct OrderSink : test::CollectingSink {
            std::vector<CheckpointRecord> checkpoints;
            std::vector<std::int64_t> steps_before;
            void on_checkpoint(const CheckpointRecord& c) override {
                std::lock_guard lock(mutex);
                checkpoints.push_back(c);
                steps_before.push_back(static_cast<std::int64_t>(steps.size()));
            }
        };
        auto whole_sink = std::make_shared<OrderSink>();
        {
            Session s(e, {folder, "u", {}, false, {}});
            s.add_sink(whole_sink);
            s.start();
            s.wait();
            QCOMPARE(s.state(), SessionState::completed);
        }
        QCOMPARE(whole_sink->checkpoints.size(), std::size_t{3});  // 10, 20, 30 (the end: not twice)
        for (std::size_t i = 0; i < 3; ++i) {
            QCOMPARE(whole_sink->checkpoints[i].step, std::int64_t(10 * (i + 1)));
            QCOMPARE(whole_sink->steps_before[i], std::int64_t(10 * (i + 1)));
            QVERIFY(std::filesystem::exists(whole_sink->checkpoints[i].file));
            QCOMPARE(whole_sink->checkpoints[i].keep, 3);
            QCOMPARE(whole_sink->checkpoints[i].bytes, std::int64_t(std::filesystem::file_size(whole_sink->checkpoints[i].file)));
        }
        QCOMPARE(whole_sink->events_of(EventKind::checkpoint).size(), std::size_t{3});

        // Resumed from step 10: the steps after it, bit for bit, and the summary of the whole run.
        const std::string from = whole_sink->checkpoints[0].file;
        const auto c = std::make_shared<const Checkpoint>(from);
        // The file is opened and checked once, by the caller: once opened, its path is replaced by
        // a damaged copy (renamed over it, as a writer replaces a file), which opening the path
        // again would refuse; the Session restores from the opened file all the same.
        const std::string damaged = from + ".damaged";
        std::filesystem::copy_file(from, damaged);
        flip_a_byte(damaged, "fc1.weight");
        std::filesystem::rename(damaged, from);
        QVERIFY_THROWS_EXCEPTION(DamagedCheckpointError, Checkpoint{from});
        auto resumed_sink = std::make_shared<OrderSink>();
        Session s(c->info().experiment, {temp_path(dir, "again"), "u", c, false, {}});
        QCOMPARE(s.first_step(), std::int64_t{10});
        s.add_sink(resumed_sink);
        s.start();
        s.wait();
        QCOMPARE(s.state(), SessionState::completed);
        QCOMPARE(resumed_sink->steps.size(), std::size_t{20});
        for (std::size_t i = 0; i < 20; ++i) {
            QCOMPARE(resumed_sink->steps[i].step, whole_sink->steps[i + 10].step);
            QCOMPARE(bits(resumed_sink->steps[i].loss), bits(whole_sink->steps[i + 10].loss));
            QVERIFY(resumed_sink->steps[i].time_s >= c->info().trainer.time_s);  // the clock goes on
        }
        QCOMPARE(resumed_sink->evals.size(), std::size_t{2});  // at 15 and 30, as the whole run's
        QCOMPARE(bits(resumed_sink->evals.back().loss), bits(whole_sink->evals.back().loss));
        const auto started = resumed_sink->events_of(EventKind::run_started);
        QCOMPARE(started.size(), std::size_t{1});
        QVERIFY2(started[0].message.find("resumed from its checkpoint at step 10") != std::string::npos,
                 started[0].message.c_str());
        QCOMPARE(s.summary().steps, std::int64_t{30});
        QCOMPARE(s.summary().samples, std::int64_t{30 * 64});
    }

    void noFolderNoCheckpoints() {
        Experiment e = quick_experiment(5);
        e.dataset.kind = "spirals";
        e.train.checkpoint_every = 1;
        auto sink = std::make_shared<test::CollectingSink>();
        Session s(e);
        s.add_sink(sink);
        s.start();
        s.wait();
        QVERIFY(sink->events_of(EventKind::checkpoint).empty());
    }
};

QTEST_GUILESS_MAIN(TestCheckpoint)
#include "test_checkpoint.moc"
