// The CUDA backend's caching allocator bookkeeping (engine/backend/cuda/block_cache.h), driven by
// a fake raw allocator with a byte budget: rounding, reuse, best fit, accounting per category,
// trimming, and the out-of-memory retry and message.
#include <QtTest>

#include <cstdlib>
#include <map>

#include "backend/cuda/block_cache.h"
#include "error.h"

using namespace mantissa;
using namespace mantissa::cuda;

namespace {

// malloc with a budget, counting calls; what it handed out is checked at the end.
struct FakeDevice {
    std::int64_t budget = std::int64_t{1} << 40;
    std::int64_t used = 0;
    int allocs = 0, frees = 0;
    std::map<void*, std::size_t> live;

    BlockCache make() {
        return BlockCache(
            [this](std::size_t bytes) -> void* {
                if (used + static_cast<std::int64_t>(bytes) > budget) return nullptr;
                void* p = std::malloc(bytes);
                live[p] = bytes;
                used += static_cast<std::int64_t>(bytes);
                ++allocs;
                return p;
            },
            [this](void* p) {
                used -= static_cast<std::int64_t>(live.at(p));
                live.erase(p);
                std::free(p);
                ++frees;
            });
    }
};

constexpr std::size_t MiB = std::size_t{1} << 20;

}  // namespace

class TestCudaBlockCache : public QObject {
    Q_OBJECT
private slots:
    void rounding_data() {
        QTest::addColumn<qulonglong>("bytes");
        QTest::addColumn<qulonglong>("rounded");
        QTest::newRow("zero") << 0ull << 512ull;
        QTest::newRow("one") << 1ull << 512ull;
        QTest::newRow("512") << 512ull << 512ull;
        QTest::newRow("513") << 513ull << 1024ull;
        QTest::newRow("just below 1 MiB") << qulonglong(MiB - 1) << qulonglong(MiB);
        QTest::newRow("1 MiB") << qulonglong(MiB) << qulonglong(2 * MiB);
        QTest::newRow("3 MiB + 1") << qulonglong(3 * MiB + 1) << qulonglong(4 * MiB);
        QTest::newRow("512 MiB") << qulonglong(512 * MiB) << qulonglong(512 * MiB);
    }
    void rounding() {
        QFETCH(qulonglong, bytes);
        QFETCH(qulonglong, rounded);
        QCOMPARE(qulonglong(BlockCache::rounded_size(bytes)), rounded);
    }

    void accounting_per_category() {
        FakeDevice dev;
        {
            BlockCache cache = dev.make();
            auto w = cache.allocate(1000, MemoryCategory::parameters, "w");
            auto g = cache.allocate(2000, MemoryCategory::gradients, "g");
            auto m = cache.allocate(4000, MemoryCategory::master_weights, "m");
            QCOMPARE(cache.in_use(MemoryCategory::parameters), 1000);
            QCOMPARE(cache.in_use(MemoryCategory::gradients), 2000);
            QCOMPARE(cache.in_use(MemoryCategory::master_weights), 4000);
            QCOMPARE(cache.in_use(MemoryCategory::activations), 0);
            QCOMPARE(cache.in_use_total(), 7000);
            QCOMPARE(cache.reserved(), 1024 + 2048 + 4096);
            QCOMPARE(cache.live_blocks(), 3);
            cache.release(g.ptr);
            QCOMPARE(cache.in_use(MemoryCategory::gradients), 0);
            QCOMPARE(cache.cached(), 2048);
            QCOMPARE(cache.reserved(), 1024 + 2048 + 4096);  // cached, not returned
            QCOMPARE(cache.peak_in_use(), 7000);
            QVERIFY(QString::fromStdString(cache.describe()).contains("parameters"));
            (void)w;
            (void)m;
        }
        // The destructor returned everything, cached and live.
        QCOMPARE(dev.used, 0);
        QCOMPARE(dev.allocs, dev.frees);
    }

    void reuse_and_best_fit() {
        FakeDevice dev;
        BlockCache cache = dev.make();
        auto a = cache.allocate(10 * MiB, MemoryCategory::activations, "a");
        void* first = a.ptr;
        cache.release(a.ptr);
        // Same size: the cached block comes back, no raw allocation.
        auto b = cache.allocate(10 * MiB, MemoryCategory::workspace, "b");
        QCOMPARE(b.ptr, first);
        QCOMPARE(cache.cache_hits(), 1);
        QCOMPARE(dev.allocs, 1);
        QCOMPARE(cache.in_use(MemoryCategory::workspace), qint64(10 * MiB));
        QCOMPARE(cache.in_use(MemoryCategory::activations), 0);
        cache.release(b.ptr);
        // 9 MiB rounds to 10 and takes the 10 MiB block...
        auto c = cache.allocate(9 * MiB, MemoryCategory::workspace, "c");
        QCOMPARE(c.ptr, first);
        cache.release(c.ptr);
        // ...but a small tensor never pins it.
        auto d = cache.allocate(1000, MemoryCategory::workspace, "d");
        QVERIFY(d.ptr != first);
        QCOMPARE(dev.allocs, 2);
        // The smallest fitting block wins.
        auto e = cache.allocate(20 * MiB, MemoryCategory::workspace, "e");
        auto f = cache.allocate(12 * MiB, MemoryCategory::workspace, "f");
        void* twelve = f.ptr;
        cache.release(e.ptr);
        cache.release(f.ptr);
        auto g = cache.allocate(11 * MiB, MemoryCategory::workspace, "g");  // fits 12 (and 20 is too big)
        QCOMPARE(g.ptr, twelve);
    }

    void trim_returns_cache() {
        FakeDevice dev;
        BlockCache cache = dev.make();
        auto a = cache.allocate(4 * MiB, MemoryCategory::gradients, "a");
        auto b = cache.allocate(6 * MiB, MemoryCategory::gradients, "b");
        cache.release(a.ptr);
        QCOMPARE(qulonglong(cache.trim()), qulonglong(4 * MiB));
        QCOMPARE(cache.cached(), 0);
        QCOMPARE(cache.reserved(), qint64(6 * MiB));
        QCOMPARE(dev.used, qint64(6 * MiB));
        (void)b;
    }

    void out_of_memory_retries_after_trim() {
        FakeDevice dev;
        dev.budget = 12 * MiB;
        BlockCache cache = dev.make();
        auto a = cache.allocate(10 * MiB, MemoryCategory::activations, "a");
        cache.release(a.ptr);  // 10 MiB cached
        // 6 MiB does not fit beside the cached 10 (and 10 is too large to serve it): the cache is
        // trimmed and the request retried.
        auto b = cache.allocate(6 * MiB, MemoryCategory::parameters, "b");
        QVERIFY(b.ptr != nullptr);
        QCOMPARE(cache.cached(), 0);
        QCOMPARE(cache.reserved(), qint64(6 * MiB));
        QCOMPARE(cache.in_use(MemoryCategory::parameters), qint64(6 * MiB));
    }

    void out_of_memory_message() {
        FakeDevice dev;
        dev.budget = 8 * MiB;
        BlockCache cache = dev.make();
        auto a = cache.allocate(6 * MiB, MemoryCategory::master_weights, "fc1.master");
        try {
            cache.allocate(4 * MiB, MemoryCategory::optimizer_state, "fc1.exp_avg");
            QFAIL("expected an out-of-memory error");
        } catch (const Error& e) {
            const QString m = e.what();
            QVERIFY2(m.contains("Out of GPU memory"), qPrintable(m));
            QVERIFY2(m.contains("fc1.exp_avg"), qPrintable(m));
            QVERIFY2(m.contains("optimizer_state"), qPrintable(m));
            QVERIFY2(m.contains("master_weights 6.0 MiB"), qPrintable(m));
        }
        // The failed request changed nothing.
        QCOMPARE(cache.in_use(MemoryCategory::optimizer_state), 0);
        QCOMPARE(cache.live_blocks(), 1);
        (void)a;
    }

    void unknown_release_is_ignored() {
        FakeDevice dev;
        BlockCache cache = dev.make();
        int local = 0;
        cache.release(&local);
        cache.release(nullptr);
        QCOMPARE(cache.unknown_releases(), 1);
        QCOMPARE(cache.cached(), 0);
    }

    void peaks() {
        FakeDevice dev;
        BlockCache cache = dev.make();
        auto a = cache.allocate(3 * MiB, MemoryCategory::activations, "a");
        auto b = cache.allocate(5 * MiB, MemoryCategory::activations, "b");
        cache.release(b.ptr);
        QCOMPARE(cache.peak_in_use(), qint64(8 * MiB));
        cache.reset_peaks();
        QCOMPARE(cache.peak_in_use(), qint64(3 * MiB));
        QCOMPARE(cache.peak_reserved(), cache.reserved());
        (void)a;
    }

    void bytes_text() {
        QCOMPARE(QString::fromStdString(format_bytes_text(512)), QString("512 B"));
        QCOMPARE(QString::fromStdString(format_bytes_text(3 * 1024 * 1024 / 2)), QString("1.5 MiB"));
        QCOMPARE(QString::fromStdString(format_bytes_text(std::int64_t{3} << 30)), QString("3.0 GiB"));
    }
};

QTEST_APPLESS_MAIN(TestCudaBlockCache)
#include "test_block_cache.moc"
