// A run's live setting changes, summarised for the history (see live_changes.h).
#include "history/live_changes.h"

#include <QObject>
#include <QStringList>

#include <algorithm>
#include <set>

#include "series/run_series.h"

namespace mantissa::ui {

std::vector<SettingChange> liveChanges(const std::vector<Event>& events) {
    std::vector<SettingChange> out;
    for (const Event& e : events)
        if (e.kind == EventKind::setting_change) out.push_back({e.step, markerLabel(e)});
    return out;
}

QString liveChangesText(const std::vector<SettingChange>& changes, int shown) {
    QStringList parts;
    const auto n = static_cast<int>(changes.size());
    for (int i = 0; i < std::min(n, shown); ++i) {
        const SettingChange& c = changes[static_cast<std::size_t>(i)];
        parts << QObject::tr("%1 at %2").arg(QString::fromStdString(c.label)).arg(c.step);
    }
    if (n > shown) parts << QObject::tr("+%1 more").arg(n - shown);
    return parts.join(QStringLiteral(", "));
}

QString liveChangesList(const std::vector<SettingChange>& changes) {
    QStringList lines;
    for (const SettingChange& c : changes)
        lines << QObject::tr("step %1: %2").arg(c.step).arg(QString::fromStdString(c.label));
    return lines.join(QLatin1Char('\n'));
}

QString summaryWithChanges(const QString& summary, const std::vector<SettingChange>& changes, int shown) {
    if (changes.empty()) return summary;
    const QString text = liveChangesText(changes, shown);
    return summary.isEmpty() ? text : summary + QStringLiteral(" \u2192 ") + text;
}

void LiveChangeReader::update(RunStore& store, const std::vector<RunRow>& runs) {
    std::set<std::int64_t> listed;
    for (const RunRow& row : runs) {
        listed.insert(row.id);
        Run& run = m_runs[row.id];
        if (run.uuid != row.uuid) {  // a new run (or another under an old id)
            run = Run{};
            run.uuid = row.uuid;
        }
        if (run.complete) continue;
        const bool ended = row.status != RunStatus::running;  // listed before reading: all is in
        std::vector<Event> events;
        try {
            events = store.events(row.id, std::max<std::int64_t>(run.lastStep, 0));
        } catch (const std::exception&) {
            continue;  // deleted meanwhile, or the store went away: keep what was read
        }
        std::int64_t atLast = 0;
        for (const Event& e : events) {
            if (e.step < run.lastStep) continue;
            if (e.step == run.lastStep && atLast++ < run.seenAtLast) continue;
            if (e.step != run.lastStep) {
                run.lastStep = e.step;
                run.seenAtLast = 0;
                atLast = 1;
            }
            ++run.seenAtLast;
            if (e.kind == EventKind::setting_change) run.changes.push_back({e.step, markerLabel(e)});
        }
        run.complete = ended;
    }
    std::erase_if(m_runs, [&](const auto& entry) { return !listed.count(entry.first); });
}

const std::vector<SettingChange>& LiveChangeReader::changes(std::int64_t id) const {
    static const std::vector<SettingChange> none;
    const auto it = m_runs.find(id);
    return it == m_runs.end() ? none : it->second.changes;
}

std::map<std::int64_t, std::vector<SettingChange>> LiveChangeReader::all() const {
    std::map<std::int64_t, std::vector<SettingChange>> out;
    for (const auto& [id, run] : m_runs)
        if (!run.changes.empty()) out[id] = run.changes;
    return out;
}

}  // namespace mantissa::ui
