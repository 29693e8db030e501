// Exporting a recorded run: one of its tables as CSV or JSON through RunStore::export_table (the
// code behind `mantissa-cli export`, so the GUI's files are the CLI's), and its experiment file,
// pretty-printed, which the experiment parser reads back to the same experiment (so it re-runs
// exactly).
//
// The functions take a path and return an error sentence (empty on success), so tests skip the
// file dialogs; exportRunWithDialog() is the interactive face the browser and viewer use.
// GUI thread only.
#pragma once

#include <QString>
#include <QStringList>

#include <cstdint>
#include <vector>

#include "store/run_store.h"

class QWidget;

namespace mantissa::ui {

// The tables a run's export offers, in the store's names: steps, layer_steps, evals, events.
QStringList exportTableNames();

// Writes `table` of run `runId` to `path` (beside it as PATH.partial, renamed at the end, so a
// failed export leaves no half file). Returns "" or one sentence saying what went wrong.
QString exportRunTable(RunStore& store, std::int64_t runId, const QString& table, RunStore::ExportFormat format,
                       const QString& path);

// Writes the run's experiment (its config_json, parsed and printed back, indented) to `path`.
// Returns "" or one sentence (also when the recorded config no longer parses).
QString exportRunExperiment(RunStore& store, std::int64_t runId, const QString& path);

// What to export, as a menu entry offers it.
struct ExportChoice {
    enum Kind { tableFile, experimentFile } kind = tableFile;
    QString table;  // for Kind::tableFile
    RunStore::ExportFormat format = RunStore::ExportFormat::csv;
};
// Every entry of the export menu: each table as CSV and as JSON, then the experiment file.
std::vector<ExportChoice> exportChoices();
QString exportChoiceLabel(const ExportChoice& choice);  // "Steps as CSV…", "Experiment file…"
// A file name to suggest: "fmnist-fp16_steps.csv", "fmnist-fp16.json".
QString suggestedExportName(const RunRow& run, const ExportChoice& choice);

// Asks for a file (a save dialog seeded with the suggested name) and exports; shows a message on
// failure. Returns the path written, or empty when cancelled or failed.
QString exportRunWithDialog(QWidget* parent, RunStore& store, std::int64_t runId, const ExportChoice& choice);

}  // namespace mantissa::ui
