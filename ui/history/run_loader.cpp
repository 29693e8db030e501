// Store -> RunSeries, once or following (see run_loader.h).
#include "history/run_loader.h"

#include <algorithm>
#include <map>

#include <nlohmann/json.hpp>

#include "error.h"
#include "history/config_summary.h"
#include "live/layer_sample.h"
#include "series/run_series.h"

namespace mantissa::ui {

namespace {

// Keeps the rows of `rows` the cursor has not seen: all those after `lastStep`, and at `lastStep`
// those past the first `seenAtStep`; then moves (lastStep, seenAtStep) to the end of `rows`.
// The store returns rows in step order, and within a step in the order they were written.
template <typename Row>
std::vector<const Row*> unseen(const std::vector<Row>& rows, std::int64_t& lastStep, std::int64_t& seenAtStep) {
    std::vector<const Row*> out;
    std::int64_t atLast = 0;
    for (const Row& r : rows) {
        if (r.step < lastStep) continue;
        if (r.step == lastStep && atLast++ < seenAtStep) continue;
        out.push_back(&r);
    }
    for (const Row* r : out) {
        if (r->step != lastStep) {
            lastStep = r->step;
            seenAtStep = 0;
        }
        ++seenAtStep;
    }
    return out;
}

std::vector<std::string> layerNames(const std::string& configJson, const std::vector<LayerStepRecord>& rows) {
    std::vector<std::string> names = layerNamesFromConfig(configJson);
    for (const auto& r : rows) {  // the recorded names win over what the config implies
        if (r.layer < 0) continue;
        const auto i = static_cast<std::size_t>(r.layer);
        if (i >= names.size()) names.resize(i + 1);
        if (!r.name.empty()) names[i] = r.name;
    }
    for (std::size_t i = 0; i < names.size(); ++i)
        if (names[i].empty()) names[i] = "fc" + std::to_string(i + 1);
    return names;
}

// A language model's run (dataset.kind "text"): its losses are nats per token.
bool isTextRun(const std::string& configJson) {
    try {
        const auto j = nlohmann::json::parse(configJson);
        return j.is_object() && j.contains("dataset") && j["dataset"].is_object() &&
               j["dataset"].value("kind", std::string{}) == "text";
    } catch (const nlohmann::json::exception&) {
        return false;
    }
}

}  // namespace

std::int64_t loadNewRows(RunStore& store, std::int64_t runId, RunSeries& series, RunCursor& cursor) {
    const auto steps = store.steps(runId, cursor.nextStep);
    const auto layerRows = store.layer_steps(runId, std::max<std::int64_t>(cursor.layerStep, 0));
    const auto evals = store.evals(runId, std::max<std::int64_t>(cursor.evalStep, 0));
    const auto events = store.events(runId, std::max<std::int64_t>(cursor.eventStep, 0));
    const auto ops = store.op_steps(runId, std::max<std::int64_t>(cursor.opStep, 0));
    const auto whatIf = store.what_if_steps(runId, std::max<std::int64_t>(cursor.whatIfStep, 0));
    const auto blockScales = cursor.blockScales
                                 ? store.block_scale_steps(runId, std::max<std::int64_t>(cursor.blockScaleStep, 0))
                                 : std::vector<BlockScaleRecord>{};
    if (!cursor.started) {
        const std::string config = store.run(runId).config_json;
        series.reset(layerNames(config, layerRows));
        series.setTextRun(isTextRun(config));
        cursor.started = true;
    }
    const auto newLayers = unseen(layerRows, cursor.layerStep, cursor.layersAtStep);
    const auto newEvals = unseen(evals, cursor.evalStep, cursor.evalsAtStep);
    const auto newEvents = unseen(events, cursor.eventStep, cursor.eventsAtStep);
    const auto newOps = unseen(ops, cursor.opStep, cursor.opsAtStep);
    const auto newWhatIf = unseen(whatIf, cursor.whatIfStep, cursor.whatIfAtStep);
    const auto newBlockScales = unseen(blockScales, cursor.blockScaleStep, cursor.blockScalesAtStep);

    // Interleaved by step as they arrived live: a step's record, then its layers and its what-if
    // rows, then its evaluations and events (RunSeries keeps each kind in its own series, so this
    // only matters for the order of the event log, which follows the stored order).
    std::size_t li = 0, vi = 0, ei = 0, oi = 0, wi = 0, bi = 0;
    std::vector<OpStepRecord> stepOps;
    std::vector<WhatIfRecord> stepWhatIf;
    std::vector<BlockScaleRecord> stepBlockScales;
    auto flushUpTo = [&](std::int64_t step) {
        while (oi < newOps.size() && newOps[oi]->step <= step) {  // one step's op statistics at a time
            stepOps.clear();
            const std::int64_t at = newOps[oi]->step;
            for (; oi < newOps.size() && newOps[oi]->step == at; ++oi) stepOps.push_back(*newOps[oi]);
            series.addOpSteps(stepOps);
        }
        for (; li < newLayers.size() && newLayers[li]->step <= step; ++li)
            series.addLayerSample(LayerSample::from(*newLayers[li]));
        // One step's what-if rows at a time, after its layer rows (which say each layer's format).
        while (wi < newWhatIf.size() && newWhatIf[wi]->step <= step) {
            stepWhatIf.clear();
            const std::int64_t at = newWhatIf[wi]->step;
            for (; wi < newWhatIf.size() && newWhatIf[wi]->step == at; ++wi) stepWhatIf.push_back(*newWhatIf[wi]);
            series.addWhatIf(stepWhatIf);
        }
        // And its block-scale views, one step at a time as live: the series keeps the newest maps.
        while (bi < newBlockScales.size() && newBlockScales[bi]->step <= step) {
            stepBlockScales.clear();
            const std::int64_t at = newBlockScales[bi]->step;
            for (; bi < newBlockScales.size() && newBlockScales[bi]->step == at; ++bi)
                stepBlockScales.push_back(*newBlockScales[bi]);
            series.addBlockScales(stepBlockScales);
        }
        for (; vi < newEvals.size() && newEvals[vi]->step <= step; ++vi) series.addEval(*newEvals[vi]);
        for (; ei < newEvents.size() && newEvents[ei]->step <= step; ++ei) series.addEvent(*newEvents[ei]);
    };
    for (const StepRecord& s : steps) {
        flushUpTo(s.step - 1);
        series.addStep(s);
        cursor.nextStep = s.step + 1;
        flushUpTo(s.step);
    }
    flushUpTo(INT64_MAX);
    return static_cast<std::int64_t>(steps.size() + newLayers.size() + newEvals.size() + newEvents.size() +
                                     newOps.size() + newWhatIf.size() + newBlockScales.size());
}

std::int64_t loadBlockScaleMaps(RunStore& store, std::int64_t runId, std::int64_t step, RunSeries& series) {
    const BlockScaleSeries& views = series.blockScales();
    const std::vector<std::int64_t> steps = views.allSteps();
    const auto at = std::lower_bound(steps.begin(), steps.end(), step);
    if (at == steps.end() || *at != step) return 0;
    // The step, then its neighbours one on each side in turn, while half the budget holds them.
    const std::size_t room = views.mapBudget() / 2;
    std::size_t bytes = views.mapBytesOfStep(step);
    auto lo = at, hi = at + 1;
    for (bool grew = true; grew;) {
        grew = false;
        if (lo != steps.begin() && bytes + views.mapBytesOfStep(*(lo - 1)) <= room) {
            bytes += views.mapBytesOfStep(*--lo);
            grew = true;
        }
        if (hi != steps.end() && bytes + views.mapBytesOfStep(*hi) <= room) {
            bytes += views.mapBytesOfStep(*hi++);
            grew = true;
        }
    }
    const std::int64_t last = *(hi - 1);
    std::vector<BlockScaleRecord> rows = store.block_scale_steps(runId, *lo);
    rows.erase(std::remove_if(rows.begin(), rows.end(), [&](const BlockScaleRecord& r) { return r.step > last; }),
               rows.end());
    series.addBlockScales(rows);  // one call: none of them pushes another out
    return static_cast<std::int64_t>(rows.size());
}

std::int64_t loadRun(RunStore& store, std::int64_t runId, RunSeries& series) {
    RunCursor cursor;
    return loadNewRows(store, runId, series, cursor);
}

RunFollower::RunFollower(std::shared_ptr<RunStore> store, std::int64_t runId, RunSeries* series, RunCursor cursor,
                         QObject* parent)
    : QObject(parent), m_store(std::move(store)), m_runId(runId), m_series(series), m_cursor(cursor) {
    connect(&m_timer, &QTimer::timeout, this, &RunFollower::poll);
}

void RunFollower::start(int intervalMs) {
    m_timer.start(intervalMs);
}

void RunFollower::stop() {
    m_timer.stop();
}

std::int64_t RunFollower::poll() {
    try {
        // Status first: rows committed before the run ended are then certain to be read below.
        m_status = m_store->run(m_runId).status;
        const std::int64_t added = loadNewRows(*m_store, m_runId, *m_series, m_cursor);
        if (added > 0) emit rowsAdded(added);
        if (m_status != RunStatus::running) {
            m_timer.stop();
            emit finished(m_status);
        }
        return added;
    } catch (const std::exception& e) {
        m_timer.stop();
        emit failed(QString::fromStdString(e.what()));
        return 0;
    }
}

}  // namespace mantissa::ui
