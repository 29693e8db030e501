// Sweeps (engine/sweep): the plan is recipes × grid points × repeats in a fixed order, each run
// the base with the recipe's settings, the point's and its seed applied (the repeats counting from
// a seed the grid sets); the fp8 and tf32 recipes
// name the model's matmul layers (fp8 all but the output); a refused setting names the run, and a
// recipe, key or value given twice is refused; the
// spec survives its JSON; the Pareto front keeps exactly the undominated points; a local sweep's
// runs take a GPU each (GpuSlots).
#include <QtTest>

#include <cmath>
#include <string>
#include <vector>

#include "error.h"
#include "sweep/gpu_slots.h"
#include "sweep/pareto.h"
#include "sweep/sweep_plan.h"

using namespace mantissa;

namespace {

std::vector<std::string> three_layers(const Experiment&) { return {"fc1", "fc2", "fc3"}; }

}  // namespace

class TestSweepPlan : public QObject {
    Q_OBJECT
private slots:
    void orderAndSettings() {
        SweepSpec spec;
        spec.base.train.seed = 7;
        spec.base.precision.layers["fc1"] = LayerPrecision::fp32;  // cleared by a recipe
        spec.recipes = {"fp16", "fp8"};
        spec.grid = {parse_grid_axis("train.lr=1e-3,3e-3"), parse_grid_axis("train.batch_size=32,64,128")};
        spec.repeat = 2;
        const auto plan = plan_sweep(spec, "s", three_layers);
        QCOMPARE(plan.size(), std::size_t{2 * 6 * 2});
        for (std::size_t i = 0; i < plan.size(); ++i) QCOMPARE(plan[i].index, std::int64_t(i));
        // The last axis varies fastest, repeats innermost.
        QCOMPARE(plan[0].label, std::string("fp16 · train.lr=1e-3 · train.batch_size=32 · seed 7"));
        QCOMPARE(plan[1].label, std::string("fp16 · train.lr=1e-3 · train.batch_size=32 · seed 8"));
        QCOMPARE(plan[2].experiment.train.batch_size, std::int64_t{64});
        QCOMPARE(plan[6].experiment.train.lr, 3e-3);
        QCOMPARE(plan[1].experiment.train.seed, std::uint64_t{8});
        QCOMPARE(plan[0].experiment.name, std::string("s · ") + plan[0].label);
        const Experiment& fp16 = plan[0].experiment;
        QCOMPARE(fp16.precision.autocast, Autocast::fp16);
        QCOMPARE(fp16.precision.loss_scaling.mode, LossScalingMode::dynamic);
        QVERIFY(fp16.precision.layers.empty());
        const Experiment& fp8 = plan[12].experiment;
        QCOMPARE(plan[12].recipe, std::string("fp8"));
        QCOMPARE(fp8.precision.layers.size(), std::size_t{2});  // not the output layer
        QVERIFY(fp8.precision.layers.at("fc1") == LayerSetting(LayerPrecision::fp8_e4m3));
        QVERIFY(!fp8.precision.layers.contains("fc3"));
        QCOMPARE(fp8.precision.autocast, Autocast::bf16);
    }

    void standardRecipes() {
        SweepSpec spec;
        for (const Recipe& r : standard_recipes()) spec.recipes.push_back(r.name);
        const auto plan = plan_sweep(spec, "s", three_layers);
        QCOMPARE(plan.size(), std::size_t{6});
        QCOMPARE(plan[1].recipe, std::string("tf32"));
        QCOMPARE(plan[1].experiment.precision.layers.size(), std::size_t{3});  // every layer, the output too
        QCOMPARE(plan[4].experiment.precision.loss_scaling.mode, LossScalingMode::off);
        QCOMPARE(plan[4].experiment.precision.autocast, Autocast::fp16);
        QCOMPARE(recipe_names(), std::string("fp32, tf32, bf16, fp16, fp16-noscale and fp8"));
    }

    void noRecipeNoGrid() {
        SweepSpec spec;
        spec.repeat = 3;
        const auto plan = plan_sweep(spec, "s", three_layers);
        QCOMPARE(plan.size(), std::size_t{3});
        QCOMPARE(plan[2].label, std::string("seed 3"));
        QVERIFY(plan[0].experiment.precision == spec.base.precision);
    }

    // A grid axis on train.seed sets each point's seed, and the repeats count from it; the label
    // names the seed the run takes.
    void aSeedAxisSetsTheSeedTheRepeatsCountFrom() {
        SweepSpec spec;
        spec.base.train.seed = 100;
        spec.grid = {parse_grid_axis("train.seed=1,7")};
        spec.repeat = 2;
        const auto plan = plan_sweep(spec, "s", three_layers);
        QCOMPARE(plan.size(), std::size_t{4});
        const std::uint64_t seeds[] = {1, 2, 7, 8};
        for (std::size_t i = 0; i < plan.size(); ++i) QCOMPARE(plan[i].experiment.train.seed, seeds[i]);
        QCOMPARE(plan[3].label, std::string("train.seed=7 · seed 8"));
        spec.repeat = 1;
        QCOMPARE(plan_sweep(spec, "s", three_layers)[1].experiment.train.seed, std::uint64_t{7});

        // A new sweep may not mix the two (seeds 1, 2, 2, 3 would run seed 2 twice).
        spec.grid = {parse_grid_axis("train.seed=1,2")};
        spec.repeat = 2;
        QVERIFY_THROWS_EXCEPTION(Error, check_new_sweep(spec));

        // A sweep stored before the rule (no "seeds" key) is re-planned as it was planned: every
        // repeat from the base's seed; and one stored with a value twice still plans.
        nlohmann::json stored = sweep_spec_to_json(spec);
        QCOMPARE(stored.at("seeds"), nlohmann::json("from_run"));
        stored.erase("seeds");
        stored["grid"][0]["values"] = {"1", "7", "7"};
        const SweepSpec old = sweep_spec_from_json(stored);
        QVERIFY(!old.seeds_from_run);
        const auto replanned = plan_sweep(old, "s", three_layers);
        QCOMPARE(replanned.size(), std::size_t{6});
        QCOMPARE(replanned[2].experiment.train.seed, std::uint64_t{100});
        QCOMPARE(replanned[3].experiment.train.seed, std::uint64_t{101});
        QCOMPARE(replanned[3].label, std::string("train.seed=7 · seed 101"));
    }

    void refusals_data() {
        QTest::addColumn<QString>("recipe");
        QTest::addColumn<QString>("grid");
        QTest::addColumn<QString>("expected");
        QTest::newRow("unknown recipe") << "fp4" << "" << "There is no recipe \"fp4\"; the recipes are fp32, tf32";
        // The setting named once, by the sentence that says what is wrong with it.
        QTest::newRow("unknown key") << "" << "train.lr_typo=1,2" << "Run 0 of the sweep (train.lr_typo=1): train.lr_typo: ";
        QTest::newRow("bad value") << "" << "train.lr=1e-3,-1" << "Run 1 of the sweep (train.lr=-1): train.lr: ";
        QTest::newRow("a list left open") << "" << "model.hidden=[8" << "Run 0 of the sweep (model.hidden=[8): "
                                                                         "model.hidden=[8: the value is not valid JSON";
        QTest::newRow("no values") << "" << "train.lr=" << "a value is empty";
        QTest::newRow("no key") << "" << "=1,2" << "write KEY=V1,V2";
        QTest::newRow("a recipe twice") << "fp16,bf16,fp16" << "" << "--recipes names fp16 twice; name each recipe once.";
        QTest::newRow("a key on two axes") << "" << "train.lr=1e-3;train.lr=2e-3"
                                           << "--grid train.lr is given twice; give all its values in one";
        QTest::newRow("a value twice") << "" << "train.lr=1e-3,3e-3,1e-3"
                                       << "--grid train.lr lists the value 1e-3 twice; list each value once.";
        QTest::newRow("a key on two axes, its hint") << "" << "train.lr=1e-3;train.lr=2e-3"
                                                     << "in one --grid train.lr=V1,V2,...";
    }
    void refusals() {
        QFETCH(QString, recipe);
        QFETCH(QString, grid);
        QFETCH(QString, expected);
        try {
            SweepSpec spec;
            if (!recipe.isEmpty())
                for (const QString& r : recipe.split(',')) spec.recipes.push_back(r.toStdString());
            if (!grid.isEmpty())
                for (const QString& axis : grid.split(';')) spec.grid.push_back(parse_grid_axis(axis.toStdString()));
            check_new_sweep(spec);
            plan_sweep(spec, "s", three_layers);
            QFAIL("accepted");
        } catch (const Error& e) {
            QVERIFY2(std::string(e.what()).find(expected.toStdString()) != std::string::npos, e.what());
        }
    }

    void gridValuesAsJsonArray() {
        const GridAxis a = parse_grid_axis("model.hidden=[[512,256],[1024]]");
        QCOMPARE(a.values, (std::vector<std::string>{"[512,256]", "[1024]"}));
        SweepSpec spec;
        spec.grid = {a};
        const auto plan = plan_sweep(spec, "s", three_layers);
        QCOMPARE(plan[0].experiment.model.hidden, (std::vector<int>{512, 256}));
        QCOMPARE(plan[1].experiment.model.hidden, (std::vector<int>{1024}));
    }

    void specRoundTrip() {
        SweepSpec spec;
        spec.base.train.lr = 0.01;
        spec.recipes = {"bf16", "fp32"};
        spec.grid = {parse_grid_axis("train.seed=1,2")};
        spec.repeat = 4;
        const SweepSpec back = sweep_spec_from_json(sweep_spec_to_json(spec));
        QVERIFY(back.base == spec.base);
        QCOMPARE(back.recipes, spec.recipes);
        QVERIFY(back.grid == spec.grid);
        QCOMPARE(back.repeat, 4);
        auto j = sweep_spec_to_json(spec);
        j["recipes"] = {"fp9"};
        QVERIFY_THROWS_EXCEPTION(Error, sweep_spec_from_json(j));
        j = sweep_spec_to_json(spec);
        j.erase("grid");
        QVERIFY_THROWS_EXCEPTION(Error, sweep_spec_from_json(j));
    }

    // A local sweep's runs on the GPU take one each while there are enough, then share the least
    // used; a run on the CPU takes none, a run that names its GPU keeps it; a machine without a GPU
    // gives none to anyone.
    void gpusShareOutOneEach() {
        Experiment gpu;  // backend auto
        Experiment cuda;
        cuda.backend = "cuda";
        Experiment cpu;
        cpu.backend = "cpu";
        Experiment pinned = cuda;
        pinned.device = 1;

        GpuSlots none(0);
        QCOMPARE(none.take(gpu), -1);
        QCOMPARE(none.take(cuda), -1);

        GpuSlots two(2);
        QCOMPARE(two.take(cpu), -1);
        QCOMPARE(two.take(gpu), 0);
        QCOMPARE(two.take(cuda), 1);
        QCOMPARE(two.take(gpu), 0);  // both taken: the first of the least used
        QCOMPARE(two.in_use(0), 2);
        two.give_back(1);
        QCOMPARE(two.take(cuda), 1);  // free again
        QCOMPARE(two.take(pinned), 1);
        QCOMPARE(two.in_use(1), 2);
        two.give_back(0);
        two.give_back(0);
        two.give_back(0);  // more than taken: stays at 0
        QCOMPARE(two.in_use(0), 0);
        QCOMPARE(two.take(gpu), 0);
        Experiment beyond = cuda;
        beyond.device = 5;  // not on this machine: the run says so itself
        QCOMPARE(two.take(beyond), 5);
        two.give_back(5);
    }

    void paretoFront() {
        // Accuracy up, memory down: (0.9, 10) and (0.95, 20) are on it; (0.85, 15) is dominated by
        // (0.9, 10); a tie of equal points keeps both; a NaN is on none.
        const std::vector<ParetoPoint> pts = {{0.9, 10}, {0.95, 20}, {0.85, 15}, {0.95, 20}, {std::nan(""), 1}, {0.8, 5}};
        const std::vector<bool> f = pareto_front(pts, true, false);
        QCOMPARE(f, (std::vector<bool>{true, true, false, true, false, true}));
        // Both lower: only the point lowest in both.
        QCOMPARE(pareto_front({{1, 1}, {2, 2}, {1, 3}}, false, false), (std::vector<bool>{true, false, false}));
    }
};

QTEST_GUILESS_MAIN(TestSweepPlan)
#include "test_sweep_plan.moc"
