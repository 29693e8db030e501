// A small GPT trained on text through the Trainer and the Session: the loss per token falls from
// ln(vocabulary), evaluation reports nats per token over the test windows and next-token accuracy,
// the sample written at an evaluation is the same for the same seed, the op statistics arrive on
// statistics steps, precision.ops changes live, and what cannot be built is one sentence each.
#include <QtTest>

#include <cmath>
#include <fstream>

#include "data/text_corpus.h"
#include "error.h"
#include "train/session.h"
#include "train/text_sample.h"
#include "train/trainer.h"
#include "tiny_gpt.h"
#include "train_support.h"

using namespace mantissa;

namespace {

// A text with structure a tiny model learns in a few dozen steps: a repeated verse.
std::string text_file() {
    const QString path = QDir::temp().filePath("mantissa-test-gpt.txt");
    std::ofstream out(path.toStdString(), std::ios::binary | std::ios::trunc);
    for (int i = 0; i < 60; ++i) out << "the cat sat on the mat; the dog sat on the log.\n";
    return path.toStdString();
}

Experiment gpt_experiment(const std::string& path, std::int64_t steps) {
    Experiment e = test::tiny_gpt_experiment(path);
    e.dataset.test_fraction = 0.1;
    e.train.batch_size = 8;
    e.train.steps = steps;
    e.train.eval_every = 0;
    e.train.lr = 3e-3;
    return e;
}

std::unique_ptr<Trainer> make_trainer(const Experiment& e) {
    return std::make_unique<Trainer>(e, load_dataset(e.dataset, e.train.seed), make_backend("cpu", 0));
}

}  // namespace

class TestGptTraining : public QObject {
    Q_OBJECT
private slots:
    void lossFallsAndEvaluationIsPerToken() {
        const Experiment e = gpt_experiment(text_file(), 60);
        auto t = make_trainer(e);
        const int vocab = t->dataset().outputs;
        QVERIFY(vocab > 10);
        const EvalRecord before = t->evaluate();
        QVERIFY(std::abs(before.loss - std::log(vocab)) < 0.3);  // small logits at the start: near uniform
        double first = 0, last = 0;
        while (!t->done()) {
            const StepReport& r = t->step();
            if (r.step.step == 0) first = r.step.loss;
            last = r.step.loss;
            QCOMPARE(r.samples, std::int64_t{8});
        }
        const EvalRecord after = t->evaluate();
        QVERIFY2(after.loss < before.loss - 1.0, qPrintable(QString("test loss %1 -> %2").arg(before.loss).arg(after.loss)));
        QVERIFY(last < first - 1.0);
        QVERIFY(after.accuracy > 0.3 && after.accuracy <= 1.0);
    }

    void sampleIsSeededAndReadable() {
        const Experiment e = gpt_experiment(text_file(), 40);
        auto t = make_trainer(e);
        while (!t->done()) t->step();
        const TextSample a = generate_text(t->network(), *t->dataset().text, 30, 8, 0.8f, 42);
        const TextSample b = generate_text(t->network(), *t->dataset().text, 30, 8, 0.8f, 42);
        QCOMPARE(a.continuation, b.continuation);
        QCOMPARE(a.prompt.size(), std::size_t{8});
        QVERIFY(!a.continuation.empty());
        // Every character it writes is one the text holds (a trained model; the unknown id aside).
        for (char c : a.continuation) QVERIFY2(std::string("the cat sat on mat;dog log.\n\xef\xbf\xbd").find(c) != std::string::npos, qPrintable(QString(QChar(c))));
        QVERIFY(a.stopped.empty());
        // A model whose output is NaN (its head's weights, as a NaN that reached them leaves them)
        // writes nothing and says why, instead of drawing arbitrary ids.
        Network& net = t->network();
        Tensor& head = net.weight(net.layer_count() - 1);
        net.write(head, std::vector<float>(static_cast<std::size_t>(head.numel()), std::nanf("")));
        const TextSample broken = generate_text(net, *t->dataset().text, 30, 8, 0.8f, 42);
        QVERIFY(broken.continuation.empty());
        QCOMPARE(broken.stopped, std::string("The model's output is NaN or inf, so no token can be drawn."));
    }

    void opStatisticsAndLiveOpPrecision() {
        Experiment e = gpt_experiment(text_file(), 4);
        e.precision.autocast = Autocast::bf16;
        auto t = make_trainer(e);
        const StepReport& r = t->step();
        QCOMPARE(static_cast<int>(r.ops.size()), 4);  // ln1, attn, ln2, ln_f
        bool saw_attention = false;
        for (const OpStepRecord& op : r.ops) {
            QVERIFY(std::isfinite(op.value) && op.value > 0);
            if (op.stat == "logit_amax") {
                QCOMPARE(op.name, std::string("blocks.0.attn"));
                saw_attention = true;
            } else {
                QCOMPARE(op.stat, std::string("min_variance"));
            }
        }
        QVERIFY(saw_attention);
        const Event ev = t->set_op_precision("softmax", OpPrecision::fp16);
        QCOMPARE(ev.message, std::string("precision.ops.softmax: auto -> fp16."));
        QCOMPARE(t->settings().precision.ops.softmax, OpPrecision::fp16);
        QVERIFY(std::isfinite(t->step().step.loss));
        QVERIFY_THROWS_EXCEPTION(Error, t->set_op_precision("gelu", OpPrecision::fp16));
    }

    void tiedHeadTrains() {
        Experiment e = gpt_experiment(text_file(), 30);
        e.model.tie_embeddings = true;
        auto t = make_trainer(e);
        for (const LayerInfo& l : t->network().desc().layers) QVERIFY(l.name != "head");  // no parameters of its own
        const double before = t->evaluate().loss;
        while (!t->done()) t->step();
        QVERIFY(t->evaluate().loss < before - 0.5);
    }

    void sessionStoresTheSampleAsAnEvaluationEvent() {
        Experiment e = gpt_experiment(text_file(), 10);
        e.train.eval_every = 5;
        Session s(e);
        auto sink = std::make_shared<test::CollectingSink>();
        s.add_sink(sink);
        s.start();
        s.wait();
        int samples = 0;
        for (const Event& ev : sink->events_of(EventKind::evaluation))
            if (ev.kind == EventKind::evaluation) {
                const auto data = nlohmann::json::parse(ev.data_json);
                QVERIFY(data.contains("sample") && data.contains("perplexity"));
                QVERIFY(std::abs(data["perplexity"].get<double>() - std::exp(data["loss"].get<double>())) < 1e-6);
                ++samples;
            }
        QCOMPARE(samples, 2);
    }

    void refusalsAreOneSentence_data() {
        QTest::addColumn<QString>("set");
        QTest::addColumn<QString>("expected");
        QTest::newRow("gpt on points") << "dataset.kind=spirals" << "is a language model; set dataset.kind to 'text'";
        QTest::newRow("mlp on text") << "model.kind=mlp" << "does not read text";
        QTest::newRow("context too long") << "dataset.context=32" << "is longer than model.context 16";
    }
    void refusalsAreOneSentence() {
        QFETCH(QString, set);
        QFETCH(QString, expected);
        Experiment e = gpt_experiment(text_file(), 1);
        apply_setting(e, set.toStdString());
        try {
            make_trainer(e);
            QFAIL("built");
        } catch (const Error& err) {
            QVERIFY2(QString(err.what()).contains(expected), err.what());
        }
    }
};

QTEST_GUILESS_MAIN(TestGptTraining)
#include "test_gpt_training.moc"
