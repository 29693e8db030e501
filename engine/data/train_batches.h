// The training batches of a run, by step: step s takes the rows first .. first+count of epoch
// (s / steps_per_epoch)'s order (epoch_order), first = (s % steps_per_epoch) * batch_size, the last
// batch of an epoch possibly partial; a text dataset's step s takes the batch_size windows the
// corpus draws for (seed, s) (data/text_corpus.h), always whole. The batch of step s is a function
// of (dataset, seed, batch size, s) alone, however it is gathered.
//
// Why a helper thread: the rows of a shuffled batch lie scattered over the dataset (188 MB for
// Fashion-MNIST), so copying them waits on main memory. For the reference experiment (128 rows of
// 784 floats, 400 KB) that took 150-250 us a step on the 2-core development machine, 5-9% of a
// CPU step and far more of a GPU one. When the machine has a second hardware thread, step s+1's
// batch is gathered on a helper thread while step s computes; take() then swaps buffers instead of
// copying. The next epoch's order is computed there too.
//
// Threads: one owner thread (the training thread) calls take() and prefetch(); the helper thread
// touches only the spare buffers and the order cache, and only while the owner is not gathering
// (take() waits until the helper is idle before it gathers or swaps).
#pragma once

#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>
#include <vector>

#include "data/dataset.h"

namespace mantissa {

struct BatchBuffers {
    std::int64_t step = -1;              // the step these rows belong to, -1 before the first
    std::int64_t rows = 0;               // rows in this batch (the epoch's last may be short)
    std::vector<float> x;                // (rows, features); the vectors only ever grow
    std::vector<std::int32_t> y;         // classification (text: rows × context next tokens)
    std::vector<std::int32_t> ids;       // text: the windows' token ids, (rows, context)
    std::vector<float> targets;          // regression, (rows, outputs)
};

// Token ids as the network's input rows (FP32 values, exact: a vocabulary is far below 2^24
// ids): the first n of `ids` into `rows`, which grows only when too small. A text batch, for
// training (TrainBatches) and for evaluation (Trainer::evaluate).
void ids_as_rows(const std::vector<std::int32_t>& ids, std::int64_t n, std::vector<float>& rows);

class TrainBatches {
public:
    enum class Prefetch : std::uint8_t { off, on };

    // `data` must outlive this object and stay unchanged. steps_per_epoch = ceil(rows / batch_size).
    // Prefetch::on without a thread to be had (a process limit) gathers on the caller's thread.
    TrainBatches(const Dataset& data, std::uint64_t seed, std::int64_t batch_size, Prefetch prefetch);
    ~TrainBatches();
    TrainBatches(const TrainBatches&) = delete;
    TrainBatches& operator=(const TrainBatches&) = delete;

    std::int64_t steps_per_epoch() const { return m_steps_per_epoch; }
    bool prefetching() const { return m_worker.joinable(); }

    // Puts step `step`'s batch in `out`: the prefetched one if it is that step's (a swap of
    // buffers), otherwise gathered now on this thread. Throws mantissa::Error as gather_batch does.
    void take(std::int64_t step, BatchBuffers& out);

    // Starts gathering step `step`'s batch on the helper thread (nothing without one, or for a
    // negative step).
    void prefetch(std::int64_t step);

    // Whether the last take() found its batch prefetched (for tests and benchmarks).
    bool last_take_was_prefetched() const { return m_last_prefetched; }

private:
    void gather(std::int64_t step, BatchBuffers& out);  // on whichever thread holds the right
    void work();

    const Dataset& m_data;
    const std::uint64_t m_seed;
    const std::int64_t m_batch_size;
    const std::int64_t m_steps_per_epoch;

    // The order cache: written by the thread that gathers (see Threads above).
    std::int64_t m_order_epoch = -1;
    std::vector<std::int64_t> m_order;

    std::mutex m_mutex;
    std::condition_variable m_cv;
    std::int64_t m_wanted = -1;          // the step the helper should gather next, -1: none
    bool m_busy = false;                 // the helper is gathering into m_spare
    bool m_quit = false;
    BatchBuffers m_spare;                // the helper's buffers; m_spare.step = what they hold
    bool m_last_prefetched = false;
    std::thread m_worker;                // started last: it uses everything above
};

}  // namespace mantissa
