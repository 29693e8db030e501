// LossScaler against a hand-computed torch.amp.GradScaler trace (scale used per step, skips,
// backoff, growth after the interval, counter resets), the defaults, the growth-to-inf guard,
// the min/max extension, static and off modes, live reconfiguration; and the LR schedule.
#include <QtTest>

#include <cmath>
#include <limits>

#include "backend/loss_scaler.h"
#include "train/lr_schedule.h"
#include "error.h"
#include "exact_compare.h"

using namespace mantissa;

class TestLossScaler : public QObject {
    Q_OBJECT
private slots:
    // Collapsed: below FP32's smallest normal number (2^-126), including 0 and the subnormals.
    void collapseIsBelowTheSmallestNormal() {
        const float min_normal = std::numeric_limits<float>::min();
        QCOMPARE(smallest_normal_scale, min_normal);
        QVERIFY(!loss_scale_collapsed(min_normal));
        QVERIFY(!loss_scale_collapsed(1.0));
        QVERIFY(!loss_scale_collapsed(65536.0));
        QVERIFY(loss_scale_collapsed(std::nextafter(min_normal, 0.0f)));
        QVERIFY(loss_scale_collapsed(std::numeric_limits<float>::denorm_min()));
        QVERIFY(loss_scale_collapsed(0.0));
        QVERIFY(loss_scale_collapsed(std::nan("")));
        // GradScaler's own rule gets there by backing off: 2^16 halves below 2^-126 at the 143rd.
        LossScaler scaler{LossScalingSpec{}};
        int backoffs = 0;
        while (!loss_scale_collapsed(scaler.scale()) && backoffs < 1000) {
            scaler.update(true);
            ++backoffs;
        }
        QCOMPARE(backoffs, 143);
        for (int i = 0; i < 30; ++i) scaler.update(true);
        QCOMPARE_EXACT(scaler.scale(), 0.0f);  // and stays there
    }

    void defaultsAreGradScalers() {
        const LossScalingSpec s;
        QCOMPARE(s.mode, LossScalingMode::dynamic);
        QCOMPARE(s.init_scale, 65536.0);
        QCOMPARE(s.growth_factor, 2.0);
        QCOMPARE(s.backoff_factor, 0.5);
        QCOMPARE(s.growth_interval, std::int64_t{2000});
        QVERIFY(!s.min_scale && !s.max_scale);
        LossScaler scaler(s);
        QCOMPARE(scaler.scale(), 65536.0f);
        QCOMPARE(scaler.inv_scale(), 1.0f / 65536.0f);
    }

    // GradScaler(init_scale=2**16, growth_interval=3) fed found_inf = F F T F F F F T T F:
    // _amp_update_scale_ by hand.
    void matchesAHandComputedGradScalerTrace() {
        LossScalingSpec s;
        s.growth_interval = 3;
        LossScaler scaler(s);
        const bool found_inf[] = {false, false, true, false, false, false, false, true, true, false};
        const float used[] = {65536, 65536, 65536, 32768, 32768, 32768, 65536, 65536, 32768, 16384};
        const std::int64_t tracker_after[] = {1, 2, 0, 1, 2, 0, 1, 0, 0, 1};
        const char* reason[] = {"", "", "backoff", "", "", "growth", "", "backoff", "backoff", ""};
        for (int i = 0; i < 10; ++i) {
            QCOMPARE(scaler.scale(), used[i]);
            const LossScaler::Update u = scaler.update(found_inf[i]);
            QCOMPARE(u.skipped, found_inf[i]);
            QCOMPARE(u.old_scale, used[i]);
            QCOMPARE(scaler.growth_tracker(), tracker_after[i]);
            QCOMPARE(QString(u.reason), QString(reason[i]));
        }
        QCOMPARE(scaler.scale(), 16384.0f);
    }

    void growthThatWouldOverflowIsRefusedButResetsTheCounter() {
        LossScalingSpec s;
        s.init_scale = std::ldexp(1.0, 127);
        s.growth_interval = 1;
        LossScaler scaler(s);
        const auto u = scaler.update(false);
        QCOMPARE(scaler.scale(), std::ldexp(1.0f, 127));
        QVERIFY(!u.changed());
        QCOMPARE(scaler.growth_tracker(), std::int64_t{0});
    }

    void minAndMaxScaleClamp() {
        LossScalingSpec s;
        s.init_scale = 4;
        s.growth_interval = 1;
        s.min_scale = 2.0;
        s.max_scale = 8.0;
        LossScaler scaler(s);
        scaler.update(false);
        QCOMPARE(scaler.scale(), 8.0f);
        scaler.update(false);
        QCOMPARE(scaler.scale(), 8.0f);
        scaler.update(true);
        scaler.update(true);
        scaler.update(true);
        QCOMPARE(scaler.scale(), 2.0f);
    }

    void staticAndOff() {
        LossScalingSpec s;
        s.mode = LossScalingMode::fixed;
        s.init_scale = 1024;
        LossScaler fixed(s);
        auto u = fixed.update(true);
        QVERIFY(u.skipped);
        QCOMPARE(fixed.scale(), 1024.0f);
        QCOMPARE(fixed.inv_scale(), 1.0f / 1024);
        s.mode = LossScalingMode::off;
        LossScaler off(s);
        QCOMPARE(off.scale(), 1.0f);
        QCOMPARE(off.inv_scale(), 1.0f);
        u = off.update(true);
        QVERIFY(!u.skipped);  // without a scaler nothing skips the step
    }

    void reconfigure() {
        LossScalingSpec s;
        s.growth_interval = 10;
        LossScaler scaler(s);
        scaler.update(true);    // 32768
        scaler.update(false);   // tracker 1
        LossScalingSpec t = s;
        t.growth_factor = 4;
        scaler.reconfigure(t);  // same mode: keeps scale and counter
        QCOMPARE(scaler.scale(), 32768.0f);
        QCOMPARE(scaler.growth_tracker(), std::int64_t{1});
        t.mode = LossScalingMode::off;
        scaler.reconfigure(t);
        QCOMPARE(scaler.scale(), 1.0f);
        t.mode = LossScalingMode::dynamic;
        t.init_scale = 256;
        scaler.reconfigure(t);  // new mode: restarts at init_scale
        QCOMPARE(scaler.scale(), 256.0f);
        QCOMPARE(scaler.growth_tracker(), std::int64_t{0});
        t.backoff_factor = 1.5;
        QVERIFY_THROWS_EXCEPTION(Error, scaler.reconfigure(t));
    }

    void learningRateSchedule() {
        QCOMPARE(learning_rate_at(LrSchedule::constant, 0.1, 50, 0, 100), 0.1);
        QCOMPARE(learning_rate_at(LrSchedule::constant, 0.1, 5, 10, 100), 0.05);
        QCOMPARE_EXACT(learning_rate_at(LrSchedule::cosine, 0.1, 0, 10, 110), 0.0);
        QCOMPARE(learning_rate_at(LrSchedule::cosine, 0.1, 10, 10, 110), 0.1);
        QVERIFY(std::abs(learning_rate_at(LrSchedule::cosine, 0.1, 60, 10, 110) - 0.05) < 1e-12);
        QVERIFY(std::abs(learning_rate_at(LrSchedule::cosine, 0.1, 110, 10, 110)) < 1e-12);
    }
};

QTEST_GUILESS_MAIN(TestLossScaler)
#include "test_loss_scaler.moc"
