// Recorder: the training thread's side (copy into the queue, wait only when the writer is a bound
// behind) and the writer thread (one transaction per batch, prepared statements reused). See
// recorder_impl.h for who owns what.
#include "store/recorder_impl.h"

#include <algorithm>
#include <chrono>
#include <cmath>

#include <sqlite3.h>

#include "store/block_scale_codec.h"
#include "store/histogram_codec.h"
#include "store/run_text.h"
#include "store/schema.h"
#include "store/store_open.h"
#include "store/store_util.h"

namespace mantissa {

using store::Statement;

namespace {

EventKind terminal_kind(RunStatus s) {
    switch (s) {
        case RunStatus::completed: return EventKind::run_finished;
        case RunStatus::failed: return EventKind::run_failed;
        case RunStatus::interrupted: return EventKind::run_interrupted;
        default: return EventKind::run_stopped;
    }
}

int terminal_index(EventKind k) {
    switch (k) {
        case EventKind::run_finished: return 0;
        case EventKind::run_stopped: return 1;
        case EventKind::run_failed: return 2;
        case EventKind::run_interrupted: return 3;
        default: return -1;
    }
}

// Inserts `rows` through `many` (`per` rows a statement) while that many are left, the rest
// through `one`; bind(q, p, row) binds a row's parameters p + 1 .. p + the table's columns + 1
// (run_id and its columns).
template <typename Row, typename Bind>
void insert_rows(const std::vector<Row>& rows, Statement& one, Statement& many, std::size_t per,
                 const store::TableSpec& table, Bind bind) {
    const int columns = static_cast<int>(table.columns.size()) + 1;
    std::size_t i = 0;
    for (; i + per <= rows.size(); i += per) {
        for (std::size_t r = 0; r < per; ++r) bind(many, static_cast<int>(r) * columns, rows[i + r]);
        many.run();
    }
    for (; i < rows.size(); ++i) {
        bind(one, 0, rows[i]);
        one.run();
    }
}

}  // namespace

// ---- construction

Recorder::Impl::Impl(std::string path, std::int64_t id, const RecorderOptions& options)
    : run_id(id),
      m_path(std::move(path)),
      m_options(options),
      m_commit_trigger(std::clamp<std::size_t>(options.queue_bound_rows / 2, 1, 16384)),
      m_db(store::open_writer_connection(m_path, options.max_page_count)),
      m_insert_step(m_db, store::insert_sql(store::steps_table())),
      m_insert_steps(m_db, store::insert_sql(store::steps_table(), rows_per_insert)),
      m_insert_layer(m_db, store::insert_sql(store::layer_steps_table())),
      m_insert_layers(m_db, store::insert_sql(store::layer_steps_table(), rows_per_insert)),
      m_insert_op(m_db, store::insert_sql(store::op_steps_table())),
      m_insert_ops(m_db, store::insert_sql(store::op_steps_table(), rows_per_insert)),
      m_insert_what_if(m_db, store::insert_sql(store::what_if_steps_table())),
      m_insert_what_ifs(m_db, store::insert_sql(store::what_if_steps_table(), rows_per_insert)),
      m_insert_block_scale(m_db, store::insert_sql(store::block_scale_steps_table())),
      m_insert_block_scales(m_db, store::insert_sql(store::block_scale_steps_table(), rows_per_insert)),
      m_insert_eval(m_db, store::insert_sql(store::evals_table())),
      m_insert_event(m_db, store::insert_sql(store::events_table())),
      m_update_progress(m_db, "UPDATE runs SET step_count = ?, updated_at = ? WHERE id = ?"),
      m_update_final(m_db,
                     "UPDATE runs SET step_count = ?, updated_at = ?, finished_at = ?, status = ?, error = ? "
                     "WHERE id = ?"),
      m_update_failed(m_db,
                      "UPDATE runs SET status = 'failed', error = ?, finished_at = ?, updated_at = ? "
                      "WHERE id = ?"),
      m_checkpoints(m_db, m_path, id) {
    if (m_options.queue_bound_rows == 0) throw Error("RecorderOptions::queue_bound_rows must be at least 1.");
    // A continued run (RunStore::continue_run) already has steps: the counts go on from them.
    Statement count(m_db, "SELECT step_count FROM runs WHERE id = ?");
    count.bind(1, run_id);
    if (count.step()) m_step_count = count.column_int(0);
    Statement last(m_db, "SELECT step, time_s FROM steps WHERE run_id = ? ORDER BY step DESC LIMIT 1");
    last.bind(1, run_id);
    if (last.step()) {
        m_last_step = last.column_int(0);
        m_last_time_s = last.column_double(1);
    }
}

Recorder::Impl::~Impl() {
    if (m_writer.joinable()) {
        {
            std::lock_guard lock(m_mutex);
            m_stop = true;
        }
        m_writer_wake.notify_all();
        m_room.notify_all();
        m_writer.join();
    }
}

void Recorder::Impl::start() {
    m_writer = std::thread([this] { writer_main(); });
}

// ---- training thread

bool Recorder::Impl::admit(std::unique_lock<std::mutex>& lock, std::size_t rows, std::int64_t step, double time_s) {
    if (m_stop || m_failed) return false;
    if (m_queue.rows() + rows <= m_options.queue_bound_rows || m_queue.rows() == 0) return true;
    if (!m_backpressure_noted) {
        m_backpressure_noted = true;
        Event notice;
        notice.step = step;
        notice.time_s = time_s;
        notice.kind = EventKind::notice;
        notice.message = "Training waited for the run store: its writer fell " + std::to_string(m_queue.rows()) +
                         " rows behind (the disk is slower than training); no rows were dropped.";
        notice.data_json = "{\"queued_rows\":" + std::to_string(m_queue.rows()) +
                           ",\"bound_rows\":" + std::to_string(m_options.queue_bound_rows) + "}";
        m_queue.events.push_back(std::move(notice));
    }
    m_writer_wake.notify_one();
    m_room.wait(lock, [&] {
        return m_stop || m_failed || m_queue.rows() == 0 || m_queue.rows() + rows <= m_options.queue_bound_rows;
    });
    return !(m_stop || m_failed);
}

void Recorder::Impl::after_push(std::size_t rows_before) {
    // Wake the writer early only when the queue crosses the trigger, not on every row.
    if (rows_before < m_commit_trigger && m_queue.rows() >= m_commit_trigger) m_writer_wake.notify_one();
}

void Recorder::Impl::push_step(const StepRecord& step, const std::vector<LayerStepRecord>& layers) {
    std::unique_lock lock(m_mutex);
    if (!admit(lock, 1 + layers.size(), step.step, step.time_s)) return;
    const std::size_t before = m_queue.rows();
    m_pushed_time_s = step.time_s;
    m_queue.steps.push_back(step);
    for (const LayerStepRecord& l : layers) {
        const auto offset = static_cast<std::uint32_t>(m_queue.blobs.size());
        store::append_histogram(l.grad_exponents, m_queue.blobs);
        m_queue.layers.push_back({l.step, l.layer, l.precision, l.name, l.grad_amax, l.grad_elements, l.frac_zero,
                                  l.frac_subnormal, l.frac_nonfinite, l.frac_underflow, l.frac_lost_updates, offset,
                                  static_cast<std::uint32_t>(m_queue.blobs.size()) - offset, l.fp8});
    }
    after_push(before);
}

void Recorder::Impl::push_eval(const EvalRecord& eval) {
    std::unique_lock lock(m_mutex);
    if (!admit(lock, 1, eval.step, 0)) return;
    const std::size_t before = m_queue.rows();
    m_queue.evals.push_back(eval);
    after_push(before);
}

void Recorder::Impl::push_event(const Event& event) {
    std::unique_lock lock(m_mutex);
    if (!admit(lock, 1, event.step, event.time_s)) return;
    const std::size_t before = m_queue.rows();
    m_queue.events.push_back(event);
    after_push(before);
}

void Recorder::Impl::push_ops(const std::vector<OpStepRecord>& ops) {
    if (ops.empty()) return;
    std::unique_lock lock(m_mutex);
    if (!admit(lock, ops.size(), ops.front().step, m_pushed_time_s)) return;
    const std::size_t before = m_queue.rows();
    for (std::size_t i = 0; i < ops.size(); ++i) {
        const OpStepRecord& o = ops[i];
        m_queue.ops.push_back({o.step, static_cast<std::int32_t>(i), o.name, o.stat, o.value});
    }
    after_push(before);
}

void Recorder::Impl::push_what_if(const std::vector<WhatIfRecord>& rows) {
    if (rows.empty()) return;
    std::unique_lock lock(m_mutex);
    if (!admit(lock, rows.size(), rows.front().step, m_pushed_time_s)) return;
    const std::size_t before = m_queue.rows();
    // A layer's rows come together, its formats in the run's order: that order is the slot.
    std::int32_t slot = 0;
    for (std::size_t i = 0; i < rows.size(); ++i) {
        slot = i > 0 && rows[i].layer == rows[i - 1].layer && rows[i].step == rows[i - 1].step ? slot + 1 : 0;
        m_queue.what_if.emplace_back(slot, rows[i]);
    }
    after_push(before);
}

void Recorder::Impl::push_block_scales(const std::vector<BlockScaleRecord>& rows) {
    if (rows.empty()) return;
    // Checked here, on the caller's thread: a record the store could not read back is the
    // caller's mistake, and the writer must not stop the recording for it.
    std::size_t units = 0;
    for (const BlockScaleRecord& r : rows) {
        std::int64_t count = 0;
        const bool operand_ok = r.operand == MatmulOperand::input || r.operand == MatmulOperand::weight ||
                                r.operand == MatmulOperand::grad_output;
        if (!operand_ok || r.rows < 0 || r.blocks_per_row < 0 || r.row_length < 0 || r.rows > r.rows_total ||
            __builtin_mul_overflow(r.rows, r.blocks_per_row, &count) ||
            static_cast<std::uint64_t>(count) != r.exponents.size())
            throw Error("Cannot record the block scales of " + store::printable_text(r.name) + "'s " +
                        (operand_ok ? std::string(matmul_operand_name(r.operand))
                                    : "operand " + std::to_string(static_cast<int>(r.operand))) +
                        " at step " + std::to_string(r.step) + ": " + std::to_string(r.exponents.size()) +
                        " exponents for " + std::to_string(r.rows) + " of " + std::to_string(r.rows_total) +
                        " rows of " + std::to_string(r.blocks_per_row) +
                        " blocks (a record holds rows x blocks_per_row exponents, and rows <= rows_total).");
        units += block_scale_units(r);
    }
    std::unique_lock lock(m_mutex);
    if (!admit(lock, units, rows.front().step, m_pushed_time_s)) return;
    const std::size_t before = m_queue.rows();
    m_queue.block_scales.insert(m_queue.block_scales.end(), rows.begin(), rows.end());
    m_queue.block_scale_units += units;
    after_push(before);
}

void Recorder::Impl::push_checkpoint(const CheckpointRecord& checkpoint) {
    // Checked on the caller's thread, as block scales are: a row the store could not use is the
    // caller's mistake, and must not stop the recording.
    if (checkpoint.file.empty() || checkpoint.step < 0 || checkpoint.bytes < 0 || checkpoint.keep < 0)
        throw Error("Cannot record the checkpoint at step " + std::to_string(checkpoint.step) + " ('" +
                    store::printable_text(checkpoint.file) + "', " + std::to_string(checkpoint.bytes) +
                    " bytes, keep " + std::to_string(checkpoint.keep) +
                    "): a checkpoint needs a file, and a step, a size and a keep that are not negative.");
    std::unique_lock lock(m_mutex);
    if (!admit(lock, 1, checkpoint.step, checkpoint.time_s)) return;
    const std::size_t before = m_queue.rows();
    m_queue.checkpoints.push_back({checkpoint, m_queue.evals.size(), m_queue.events.size()});
    after_push(before);
}

// ---- any thread

void Recorder::Impl::finish(RunStatus status, const std::string& error) {
    if (status == RunStatus::running)
        throw Error(
            "Recorder::finish() needs the run's final status (completed, stopped, failed or interrupted), "
            "not running.");
    std::lock_guard finishing(m_finish_mutex);  // a second caller returns once the first is done
    {
        std::lock_guard lock(m_mutex);
        if (m_finish_called) return;
        m_finish_called = true;
        m_final_status = status;
        m_final_error = error;
        m_stop = true;
    }
    m_writer_wake.notify_all();
    m_room.notify_all();
    if (m_writer.joinable()) m_writer.join();
}

std::string Recorder::Impl::error() const {
    std::lock_guard lock(m_mutex);
    return m_error;
}

// ---- writer thread

void Recorder::Impl::writer_main() noexcept {
    using clock = std::chrono::steady_clock;
    const auto interval = std::chrono::milliseconds(std::max(1, m_options.commit_interval_ms));
    auto next_commit = clock::now() + interval;
    for (;;) {
        bool stopping = false, failed = false;
        {
            std::unique_lock lock(m_mutex);
            m_writer_wake.wait_until(lock, next_commit, [&] { return m_stop || m_queue.rows() >= m_commit_trigger; });
            std::swap(m_queue, m_batch);
            stopping = m_stop;
            failed = m_failed;
            if (m_batch.rows() < m_commit_trigger) m_backpressure_noted = false;  // caught up: a new episode
        }
        m_room.notify_all();
        next_commit = clock::now() + interval;
        if (!failed && (m_batch.rows() > 0 || stopping)) {
            // Another process holding the write lock past the busy timeout (a large remove) is
            // waited out, batch kept, for up to a minute; any other error stops recording.
            for (int attempt = 1;; ++attempt) {
                try {
                    write_batch(m_batch, stopping);
                    break;
                } catch (const store::SqliteError& e) {
                    if (e.code() == SQLITE_BUSY && attempt * store::busy_timeout_ms < 60000) continue;
                    record_failure(e);
                    break;
                } catch (const std::exception& e) {
                    record_failure(e);
                    break;
                }
            }
        }
        m_batch.clear();
        if (stopping) break;
    }
    bool failed = false;
    {
        std::lock_guard lock(m_mutex);
        failed = m_failed;
    }
    if (failed && !m_marked_failed) try_mark_failed();
}

void Recorder::Impl::write_batch(const Batch& batch, bool final) {
    store::Transaction transaction(m_db);
    const std::string now = store::iso8601_now();
    std::int64_t last_step = m_last_step;
    double last_time = m_last_time_s;
    bool seen[4] = {};

    auto bind_step = [&](Statement& q, int p, const StepRecord& s) {
        if (s.step >= last_step) {
            last_step = s.step;
            last_time = s.time_s;
        }
        const MemoryBreakdown& m = s.memory;
        q.bind(p + 1, run_id).bind(p + 2, s.step).bind(p + 3, static_cast<std::int64_t>(s.epoch));
        q.bind(p + 4, s.time_s).bind(p + 5, s.loss).bind(p + 6, s.loss_scale).bind(p + 7, s.overflow);
        q.bind(p + 8, s.skipped).bind(p + 9, s.grad_norm).bind(p + 10, s.learning_rate);
        q.bind(p + 11, s.samples_per_s).bind(p + 12, s.step_time_ms).bind(p + 13, m.parameters);
        q.bind(p + 14, m.master_weights).bind(p + 15, m.gradients).bind(p + 16, m.optimizer_state);
        q.bind(p + 17, m.activations).bind(p + 18, m.workspace).bind(p + 19, m.device_in_use);
        q.bind(p + 20, m.device_total).bind(p + 21, m.modelled);
    };
    auto bind_layer = [&](Statement& q, int p, const QueuedLayer& l) {
        const std::span<const std::uint8_t> blob(batch.blobs.data() + l.blob_offset, l.blob_size);
        q.bind(p + 1, run_id).bind(p + 2, l.step).bind(p + 3, static_cast<std::int64_t>(l.layer));
        q.bind_static(p + 4, l.name).bind_static(p + 5, l.precision.name()).bind(p + 6, l.grad_amax);
        q.bind(p + 7, l.grad_elements).bind(p + 8, l.frac_zero).bind(p + 9, l.frac_subnormal);
        q.bind(p + 10, l.frac_nonfinite).bind(p + 11, l.frac_underflow).bind(p + 12, l.frac_lost_updates);
        q.bind_static_blob(p + 13, blob);
        // Always bound: a statement's parameters outlive its rows (NULL for a layer without FP8).
        if (l.fp8) {
            const Fp8LayerScaling& f = *l.fp8;
            q.bind(p + 14, f.input.scale).bind(p + 15, f.weight.scale).bind(p + 16, f.grad_output.scale);
            q.bind(p + 17, f.input.amax).bind(p + 18, f.weight.amax).bind(p + 19, f.grad_output.amax);
        } else {
            for (int c = 14; c <= 19; ++c) q.bind_null(p + c);
        }
    };
    insert_rows(batch.steps, m_insert_step, m_insert_steps, rows_per_insert, store::steps_table(), bind_step);
    insert_rows(batch.layers, m_insert_layer, m_insert_layers, rows_per_insert, store::layer_steps_table(),
                bind_layer);
    auto bind_op = [&](Statement& q, int p, const QueuedOp& o) {
        q.bind(p + 1, run_id).bind(p + 2, o.step).bind(p + 3, static_cast<std::int64_t>(o.op));
        q.bind_static(p + 4, o.name).bind_static(p + 5, o.stat).bind(p + 6, o.value);  // a NaN binds as NULL
    };
    insert_rows(batch.ops, m_insert_op, m_insert_ops, rows_per_insert, store::op_steps_table(), bind_op);
    auto bind_what_if = [&](Statement& q, int p, const std::pair<std::int32_t, WhatIfRecord>& row) {
        const WhatIfRecord& w = row.second;
        q.bind(p + 1, run_id).bind(p + 2, w.step).bind(p + 3, static_cast<std::int64_t>(w.layer));
        q.bind(p + 4, static_cast<std::int64_t>(row.first)).bind_static(p + 5, w.format.name()).bind_static(p + 6, w.name);
        int c = p + 7;
        for (const QuantisationStats* s : {&w.input, &w.weight, &w.grad_output}) {
            // A NaN binds as NULL; SQLite keeps the infinities.
            q.bind(c, s->underflow).bind(c + 1, s->saturation).bind(c + 2, s->sqnr_db).bind(c + 3, s->values);
            c += 4;
        }
    };
    insert_rows(batch.what_if, m_insert_what_if, m_insert_what_ifs, rows_per_insert, store::what_if_steps_table(),
                bind_what_if);
    // Every blob of the batch first: a statement binds them in place until it runs.
    std::vector<std::size_t> blob_ends;
    m_block_blobs.clear();
    for (const BlockScaleRecord& r : batch.block_scales) {
        store::append_block_exponents(r.exponents, m_block_blobs);
        blob_ends.push_back(m_block_blobs.size());
    }
    auto bind_block_scales = [&](Statement& q, int p, const BlockScaleRecord& r) {
        const auto i = static_cast<std::size_t>(&r - batch.block_scales.data());
        const std::size_t begin = i == 0 ? 0 : blob_ends[i - 1];
        const std::span<const std::uint8_t> blob(m_block_blobs.data() + begin, blob_ends[i] - begin);
        q.bind(p + 1, run_id).bind(p + 2, r.step).bind(p + 3, static_cast<std::int64_t>(r.layer));
        q.bind(p + 4, static_cast<std::int64_t>(r.operand)).bind_static(p + 5, r.name);
        q.bind_static(p + 6, matmul_operand_name(r.operand)).bind_static(p + 7, block_format_name(r.format));
        q.bind(p + 8, r.own).bind(p + 9, r.rows_total).bind(p + 10, r.rows).bind(p + 11, r.row_length);
        q.bind(p + 12, r.blocks_per_row).bind_static_blob(p + 13, blob);
    };
    insert_rows(batch.block_scales, m_insert_block_scale, m_insert_block_scales, rows_per_insert,
                store::block_scale_steps_table(), bind_block_scales);
    // A checkpoint keeps the ids of the evals and events handed over before it: those of this
    // batch are collected as they are inserted, the run's earlier ones are below them.
    const bool checkpoints = !batch.checkpoints.empty();
    const std::int64_t evals_base = checkpoints ? m_checkpoints.last_eval_id() : 0;
    const std::int64_t events_base = checkpoints ? m_checkpoints.last_event_id() : 0;
    std::vector<std::int64_t> eval_ids, event_ids;
    for (const EvalRecord& e : batch.evals) {
        Statement& q = m_insert_eval;
        q.bind(1, run_id).bind(2, e.step).bind_static(3, e.split).bind(4, e.loss).bind(5, e.accuracy);
        q.run();
        if (checkpoints) eval_ids.push_back(m_db.last_insert_rowid());
    }
    auto insert_event = [&](const Event& e) {
        Statement& q = m_insert_event;
        q.bind(1, run_id).bind(2, e.step).bind(3, e.time_s).bind_static(4, event_kind_name(e.kind));
        q.bind_static(5, e.message);
        q.bind_static(6, e.data_json.empty() ? std::string_view("{}") : std::string_view(e.data_json));
        q.run();
        if (int i = terminal_index(e.kind); i >= 0) seen[i] = true;
    };
    for (const Event& e : batch.events) {
        insert_event(e);
        if (checkpoints) event_ids.push_back(m_db.last_insert_rowid());
    }
    std::vector<std::string> unlink;  // files no row names after this transaction: unlinked once it commits
    if (checkpoints) write_checkpoints(batch, eval_ids, event_ids, evals_base, events_base, now, unlink);

    const std::int64_t step_count = m_step_count + static_cast<std::int64_t>(batch.steps.size());
    if (final) {
        RunStatus status;
        std::string error;
        {
            std::lock_guard lock(m_mutex);
            status = m_final_status;
            error = m_final_error;
        }
        const int ti = terminal_index(terminal_kind(status));
        if (!seen[ti] && !m_terminal_event_written[ti]) {
            Event e;
            e.step = last_step;
            e.time_s = last_time;
            e.kind = terminal_kind(status);
            const std::string n = std::to_string(step_count) + (step_count == 1 ? " step" : " steps");
            switch (status) {
                case RunStatus::completed: e.message = "The run completed after " + n + "."; break;
                case RunStatus::failed: e.message = error.empty() ? "The run failed after " + n + "." : error; break;
                case RunStatus::interrupted: e.message = "The run was interrupted after " + n + "."; break;
                default: e.message = "The run was stopped after " + n + "."; break;
            }
            e.data_json = "{\"steps\":" + std::to_string(step_count) + "}";
            insert_event(e);
        }
        Statement& q = m_update_final;
        q.bind(1, step_count).bind(2, now).bind(3, now);
        q.bind(4, run_status_name(status)).bind(5, error).bind(6, run_id);
        q.run();
    } else {
        m_update_progress.bind(1, step_count).bind(2, now).bind(3, run_id);
        m_update_progress.run();
    }
    transaction.commit();
    store::unlink_files(unlink);

    m_step_count = step_count;
    m_last_step = last_step;
    m_last_time_s = last_time;
    for (int i = 0; i < 4; ++i) m_terminal_event_written[i] = m_terminal_event_written[i] || seen[i];
}

void Recorder::Impl::write_checkpoints(const Batch& batch, const std::vector<std::int64_t>& eval_ids,
                                       const std::vector<std::int64_t>& event_ids, std::int64_t evals_base,
                                       std::int64_t events_base, const std::string& now,
                                       std::vector<std::string>& unlink) {
    for (const QueuedCheckpoint& c : batch.checkpoints) {
        const std::int64_t evals_before = c.evals_before > 0 ? eval_ids[c.evals_before - 1] : evals_base;
        const std::int64_t events_before = c.events_before > 0 ? event_ids[c.events_before - 1] : events_base;
        m_checkpoints.write(c.record, events_before, evals_before, now, unlink);
    }
}

void Recorder::Impl::record_failure(const std::exception& e) noexcept {
    try {
        std::string sentence = "Recording of run " + std::to_string(run_id) + " stopped";
        sentence +=
            m_step_count > 0 ? " after step " + std::to_string(m_last_step) : std::string(" before its first step");
        sentence += " (what was recorded before is kept): " + store::continue_sentence(e.what()) + ".";
        {
            std::lock_guard lock(m_mutex);
            m_failed = true;
            m_error = sentence;
        }
    } catch (...) {
        std::lock_guard lock(m_mutex);
        m_failed = true;
        if (m_error.empty()) m_error = "Recording stopped after a write error.";
    }
    m_room.notify_all();
    try_mark_failed();
}

void Recorder::Impl::try_mark_failed() noexcept {
    try {
        std::string error;
        {
            std::lock_guard lock(m_mutex);
            error = m_error;
        }
        const std::string now = store::iso8601_now();
        m_update_failed.reset();
        m_update_failed.bind(1, error).bind(2, now);
        m_update_failed.bind(3, now).bind(4, run_id);
        m_update_failed.run();  // autocommit: one row, most likely to fit where a batch did not
        m_marked_failed = true;
        try {
            Event e;
            m_insert_event.reset();
            m_insert_event.bind(1, run_id).bind(2, m_last_step).bind(3, m_last_time_s);
            m_insert_event.bind(4, event_kind_name(EventKind::run_failed)).bind(5, error);
            m_insert_event.bind(6, "{}");
            m_insert_event.run();
        } catch (...) {
            // The status says it; the event is a courtesy that may not fit on a full disk.
        }
    } catch (...) {
        // Still `running` in the file: the next open marks it interrupted once this process ends.
    }
}

// ---- Recorder

Recorder::Recorder(std::unique_ptr<Impl> impl) : m_impl(std::move(impl)) {}

Recorder::~Recorder() {
    try {
        m_impl->finish(RunStatus::stopped, {});
    } catch (...) {
    }
}

std::int64_t Recorder::run_id() const {
    return m_impl->run_id;
}

void Recorder::on_step(const StepRecord& step, const std::vector<LayerStepRecord>& layers) {
    m_impl->push_step(step, layers);
}
void Recorder::on_eval(const EvalRecord& eval) {
    m_impl->push_eval(eval);
}
void Recorder::on_event(const Event& event) {
    m_impl->push_event(event);
}
void Recorder::on_op_steps(const std::vector<OpStepRecord>& ops) {
    m_impl->push_ops(ops);
}
void Recorder::on_what_if(const std::vector<WhatIfRecord>& rows) {
    m_impl->push_what_if(rows);
}
void Recorder::on_block_scales(const std::vector<BlockScaleRecord>& rows) {
    m_impl->push_block_scales(rows);
}
void Recorder::on_checkpoint(const CheckpointRecord& checkpoint) {
    m_impl->push_checkpoint(checkpoint);
}

void Recorder::finish(RunStatus status, const std::string& error) {
    m_impl->finish(status, error);
}

std::string Recorder::error() const {
    return m_impl->error();
}

}  // namespace mantissa
