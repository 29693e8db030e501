// TrainBatches: a run's batches by step, gathered one step ahead on a helper thread where the
// machine has a hardware thread to spare. See train_batches.h for why and for the thread rules.
#include "data/train_batches.h"

#include <string>
#include <system_error>
#include <utility>

#include "data/text_corpus.h"
#include "error.h"

namespace mantissa {

TrainBatches::TrainBatches(const Dataset& data, std::uint64_t seed, std::int64_t batch_size, Prefetch prefetch)
    : m_data(data), m_seed(seed), m_batch_size(batch_size),
      m_steps_per_epoch(batch_size > 0 ? (data.train.rows + batch_size - 1) / batch_size : 0) {
    if (batch_size <= 0)
        throw Error("TrainBatches: the batch size must be positive, got " + std::to_string(batch_size) + ".");
    if (data.train.rows <= 0) throw Error("TrainBatches: the training split has no rows.");
    if (prefetch == Prefetch::on) {
        try {
            m_worker = std::thread([this] { work(); });
        } catch (const std::system_error&) {
            // No thread to be had (a process or cgroup limit): gather on the training thread.
        }
    }
}

TrainBatches::~TrainBatches() {
    if (!m_worker.joinable()) return;
    {
        std::lock_guard lock(m_mutex);
        m_quit = true;
    }
    m_cv.notify_all();
    m_worker.join();
}

void ids_as_rows(const std::vector<std::int32_t>& ids, std::int64_t n, std::vector<float>& rows) {
    if (rows.size() < static_cast<std::size_t>(n)) rows.resize(static_cast<std::size_t>(n));
    for (std::size_t i = 0; i < static_cast<std::size_t>(n); ++i) rows[i] = static_cast<float>(ids[i]);
}

void TrainBatches::gather(std::int64_t step, BatchBuffers& out) {
    if (step < 0) throw Error("TrainBatches: step " + std::to_string(step) + " is negative.");
    if (m_data.text) {
        // Text: the windows of (seed, step), every batch whole (text_corpus.h).
        out.step = -1;
        m_data.text->fill_train_batch(m_seed, step, static_cast<int>(m_batch_size), out.ids, out.y);
        ids_as_rows(out.ids, m_batch_size * m_data.text->context(), out.x);
        out.rows = m_batch_size;
        out.step = step;
        return;
    }
    const std::int64_t epoch = step / m_steps_per_epoch;
    if (epoch != m_order_epoch) {
        m_order = epoch_order(m_data.train.rows, m_seed, epoch);
        m_order_epoch = epoch;
    }
    const std::int64_t first = (step % m_steps_per_epoch) * m_batch_size;
    const std::int64_t count = std::min(m_batch_size, m_data.train.rows - first);
    out.step = -1;  // not a whole batch until the copy is done
    gather_batch(m_data, m_data.train, m_order, first, count, out.x, out.y, out.targets);
    out.rows = count;
    out.step = step;
}

void TrainBatches::take(std::int64_t step, BatchBuffers& out) {
    m_last_prefetched = false;
    if (m_worker.joinable()) {
        std::unique_lock lock(m_mutex);
        m_cv.wait(lock, [this] { return m_wanted < 0 && !m_busy; });  // the helper is idle from here on
        if (step >= 0 && m_spare.step == step) {
            std::swap(out, m_spare);
            m_spare.step = -1;
            m_last_prefetched = true;
            return;
        }
    }
    // Not prefetched (the first step, a jump, no helper thread, or the helper's gather failed:
    // gathering here throws its error on the training thread).
    gather(step, out);
}

void TrainBatches::prefetch(std::int64_t step) {
    if (!m_worker.joinable() || step < 0) return;
    {
        std::lock_guard lock(m_mutex);
        m_wanted = step;
    }
    m_cv.notify_all();
}

void TrainBatches::work() {
    std::unique_lock lock(m_mutex);
    for (;;) {
        m_cv.wait(lock, [this] { return m_quit || m_wanted >= 0; });
        if (m_quit) return;
        const std::int64_t step = std::exchange(m_wanted, -1);
        m_busy = true;
        lock.unlock();
        try {
            gather(step, m_spare);
        } catch (...) {
            m_spare.step = -1;  // take() gathers on its own thread and reports the error there
        }
        lock.lock();
        m_busy = false;
        m_cv.notify_all();
    }
}

}  // namespace mantissa
