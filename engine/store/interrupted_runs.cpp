// Detecting and marking interrupted runs; see interrupted_runs.h.
#include "store/interrupted_runs.h"

#include <vector>

#include "store/sqlite_db.h"
#include "store/store_util.h"

namespace mantissa::store {

namespace {

struct RunningRow {
    std::int64_t id = 0;
    ProcessIdentity recorder;
};

}  // namespace

RunStatus effective_status(RunStatus stored, const ProcessIdentity& recorder) {
    if (stored == RunStatus::running && process_liveness(recorder) == Liveness::gone) return RunStatus::interrupted;
    return stored;
}

int mark_interrupted_runs(Connection& db) {
    std::vector<RunningRow> gone;
    {
        Statement q(db, "SELECT id, host, pid, process_start, boot_id FROM runs WHERE status = 'running'");
        while (q.step()) {
            RunningRow r;
            r.id = q.column_int(0);
            r.recorder.host = q.column_text(1);
            r.recorder.pid = q.column_int(2);
            r.recorder.start_ticks = q.column_int(3);
            r.recorder.boot_id = q.column_text(4);
            if (process_liveness(r.recorder) == Liveness::gone) gone.push_back(std::move(r));
        }
    }
    if (gone.empty()) return 0;

    int marked = 0;
    Transaction t(db);
    for (const RunningRow& r : gone)
        if (mark_interrupted(db, r.id, r.recorder, "when the store was next opened")) ++marked;
    t.commit();
    return marked;
}

bool mark_interrupted(Connection& db, std::int64_t run_id, const ProcessIdentity& recorder, const std::string& when) {
    Statement mark(db,
                   "UPDATE runs SET status = 'interrupted', finished_at = updated_at "
                   "WHERE id = ? AND status = 'running'");
    mark.bind(1, run_id);
    mark.run();
    if (db.changes() != 1) return false;
    std::int64_t step = 0;
    double time_s = 0;
    Statement last(db, "SELECT step, time_s FROM steps WHERE run_id = ? ORDER BY step DESC LIMIT 1");
    last.bind(1, run_id);
    if (last.step()) {
        step = last.column_int(0);
        time_s = last.column_double(1);
    }
    const std::string message = "The process that recorded this run (pid " + std::to_string(recorder.pid) + " on " +
                                recorder.host + ") ended without finishing it; it was marked interrupted " + when + ".";
    const std::string data = "{\"pid\":" + std::to_string(recorder.pid) + ",\"host\":" + json_quote(recorder.host) +
                             ",\"last_step\":" + std::to_string(step) + "}";
    Statement event(db,
                    "INSERT INTO events(run_id, step, time_s, kind, message, data_json) "
                    "VALUES(?, ?, ?, 'run_interrupted', ?, ?)");
    event.bind(1, run_id).bind(2, step).bind(3, time_s).bind(4, message).bind(5, data);
    event.run();
    return true;
}

}  // namespace mantissa::store
