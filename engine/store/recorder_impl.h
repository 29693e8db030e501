// The inside of a Recorder: a queue the training thread appends to, and a writer thread that owns
// the recorder's own SQLite connection and commits what is queued in one transaction per batch.
//
// Ownership: everything under `m_mutex` is shared (the queue, the flags, the error); the
// connection, its prepared statements and the members marked "writer thread" belong to the writer
// thread once start() has run (before that, to the thread that made the Impl).
//
// Invariants: a row is either queued, or committed, or part of the batch the writer is writing
// (committed or rolled back as a whole). The queue holds at most `queue_bound_rows` rows plus one
// notice and the record being admitted; a producer waits for room and never drops, except after
// finish() or after a write error, when nothing more can be written.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "store/checkpoint_rows.h"
#include "store/run_store.h"
#include "store/sqlite_db.h"

namespace mantissa {

struct Recorder::Impl {
    Impl(std::string path, std::int64_t run_id, const RecorderOptions& options);  // throws
    ~Impl();

    void start();
    void push_step(const StepRecord& step, const std::vector<LayerStepRecord>& layers);
    void push_eval(const EvalRecord& eval);
    void push_event(const Event& event);
    void push_ops(const std::vector<OpStepRecord>& ops);
    void push_what_if(const std::vector<WhatIfRecord>& rows);
    void push_block_scales(const std::vector<BlockScaleRecord>& rows);  // throws for a malformed record
    void push_checkpoint(const CheckpointRecord& checkpoint);           // throws for a malformed record
    void finish(RunStatus status, const std::string& error);
    std::string error() const;

    const std::int64_t run_id;

private:
    // A layer row as queued: the histogram is encoded by the producer into the batch's byte
    // arena, so a queued row takes ~150 bytes instead of LayerStepRecord's 1.2 KB (the queue's
    // memory stays small at its bound, and the writer reads it warm).
    struct QueuedLayer {
        std::int64_t step;
        std::int32_t layer;
        ComputeFormat precision;
        std::string name;
        double grad_amax;
        std::int64_t grad_elements;
        double frac_zero, frac_subnormal, frac_nonfinite, frac_underflow, frac_lost_updates;
        std::uint32_t blob_offset, blob_size;  // into Batch::blobs
        std::optional<Fp8LayerScaling> fp8;    // absent: the fp8_* columns are NULL
    };

    // An op row as queued: its place in the step's report is the `op` column.
    struct QueuedOp {
        std::int64_t step;
        std::int32_t op;
        std::string name, stat;
        double value;
    };

    // A checkpoint as queued, with the evals and events queued before it in the same batch: the
    // writer turns those counts into the ids its row keeps (events_before, evals_before).
    struct QueuedCheckpoint {
        CheckpointRecord record;
        std::size_t evals_before, events_before;
    };

    struct Batch {
        std::vector<StepRecord> steps;
        std::vector<QueuedLayer> layers;
        std::vector<std::uint8_t> blobs;
        std::vector<EvalRecord> evals;
        std::vector<Event> events;
        std::vector<QueuedOp> ops;
        std::vector<std::pair<std::int32_t, WhatIfRecord>> what_if;  // with its slot: its format's place
        // Compressed by the writer (block_scale_codec.h), so the training thread only copies.
        std::vector<BlockScaleRecord> block_scales;
        std::size_t block_scale_units = 0;  // their block_scale_units(), summed
        std::vector<QueuedCheckpoint> checkpoints;
        std::size_t rows() const {
            return steps.size() + layers.size() + evals.size() + events.size() + ops.size() + what_if.size() +
                   block_scale_units + checkpoints.size();
        }
        void clear() {  // keeps the capacity: batches are swapped and reused
            steps.clear();
            layers.clear();
            blobs.clear();
            evals.clear();
            events.clear();
            ops.clear();
            what_if.clear();
            block_scales.clear();
            block_scale_units = 0;
            checkpoints.clear();
        }
    };

    // What a block-scale row counts for against the queue's bound: one row per 64 exponents
    // (128 bytes, about a queued layer row's size), so that the bound holds the queue's memory
    // for these rows of tens of kilobytes too.
    static std::size_t block_scale_units(const BlockScaleRecord& r) { return 1 + r.exponents.size() / 64; }

    // Waits (lock held) until `rows` more fit; false when the rows must be dropped (finished or
    // failed). Queues the backpressure notice once per episode.
    bool admit(std::unique_lock<std::mutex>& lock, std::size_t rows, std::int64_t step, double time_s);
    void after_push(std::size_t rows_before);

    void writer_main() noexcept;
    void write_batch(const Batch& batch, bool final);
    // The batch's checkpoint rows, after its evals and events (their ids in order of insertion).
    void write_checkpoints(const Batch& batch, const std::vector<std::int64_t>& eval_ids,
                           const std::vector<std::int64_t>& event_ids, std::int64_t evals_base,
                           std::int64_t events_base, const std::string& now, std::vector<std::string>& unlink);
    void record_failure(const std::exception& e) noexcept;
    void try_mark_failed() noexcept;

    const std::string m_path;
    const RecorderOptions m_options;
    const std::size_t m_commit_trigger;  // rows that wake the writer before its interval ends

    std::mutex m_finish_mutex;  // serialises finish() callers
    mutable std::mutex m_mutex;
    std::condition_variable m_writer_wake;  // rows to write, or stop
    std::condition_variable m_room;         // the queue has room, or recording ended
    Batch m_queue;
    bool m_stop = false;
    bool m_finish_called = false;
    bool m_failed = false;
    bool m_backpressure_noted = false;
    RunStatus m_final_status = RunStatus::stopped;
    std::string m_final_error;
    std::string m_error;
    double m_pushed_time_s = 0;  // the last step handed in: the time of a backpressure notice for its ops
    std::thread m_writer;

    // Writer thread.
    store::Connection m_db;
    // Steps, layer rows and op rows go in rows_per_insert at a time while a batch has that many: one
    // statement for many rows spends SQLite's per-statement work once.
    static constexpr int rows_per_insert = 16;
    store::Statement m_insert_step, m_insert_steps, m_insert_layer, m_insert_layers, m_insert_op, m_insert_ops;
    store::Statement m_insert_what_if, m_insert_what_ifs, m_insert_block_scale, m_insert_block_scales;
    store::Statement m_insert_eval, m_insert_event;
    store::Statement m_update_progress, m_update_final, m_update_failed;
    store::CheckpointWriter m_checkpoints;
    Batch m_batch;                  // the batch being written
    std::vector<std::uint8_t> m_block_blobs;  // the batch's block-scale blobs, bound in place
    // What the run held when the recorder was made (nothing for a new run; for a run continued from
    // a checkpoint, its steps before it), then as committed.
    std::int64_t m_step_count = 0;  // rows committed to steps
    std::int64_t m_last_step = 0;
    double m_last_time_s = 0;
    bool m_terminal_event_written[4] = {};  // run_finished, run_stopped, run_failed, run_interrupted seen
    bool m_marked_failed = false;
};

}  // namespace mantissa
