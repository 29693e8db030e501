// Exporting a run's tables and its experiment file (see run_export.h).
#include "history/run_export.h"

#include <QDir>
#include <QFile>
#include <QFileDialog>
#include <QMessageBox>
#include <QRegularExpression>

#include <fstream>

#include <nlohmann/json.hpp>

#include "export/output_check.h"
#include "store/schema.h"
#include "config/experiment.h"

namespace mantissa::ui {

namespace {

// Writes `write`'s output to TARGET.partial and renames it onto TARGET, the file `path` names (the one
// its symbolic links lead to, so a link stays a link) once complete. Never onto a file no output
// may replace (the run store or any SQLite database and the files SQLite keeps beside one, a
// Mantissa checkpoint, a named pipe: export/output_check.h), which is refused before anything is
// written; sentences name `path` as the person chose it.
template <typename Writer>
QString writeAtomically(const QString& path, Writer&& write) {
    if (QString refusal = outputRefusal(path); !refusal.isEmpty()) return refusal;
    const QString target = outputDestination(path);
    const QString partial = target + QStringLiteral(".partial");
    try {
        std::ofstream out(QFile::encodeName(partial).toStdString(), std::ios::binary | std::ios::trunc);
        if (!out) return QObject::tr("Cannot write %1: the folder is missing or not writable.").arg(QDir::toNativeSeparators(path));
        write(out);
        out.flush();
        if (!out) {
            out.close();
            QFile::remove(partial);
            return QObject::tr("Writing %1 failed (is the disk full?).").arg(QDir::toNativeSeparators(path));
        }
    } catch (const std::exception& e) {
        QFile::remove(partial);
        return QString::fromStdString(e.what());
    }
    if (QFile::exists(target) && !QFile::remove(target)) {
        QFile::remove(partial);
        return QObject::tr("Cannot replace %1: it is not writable.").arg(QDir::toNativeSeparators(path));
    }
    if (!QFile::rename(partial, target)) {
        QFile::remove(partial);
        return QObject::tr("Cannot write %1.").arg(QDir::toNativeSeparators(path));
    }
    return {};
}

QString tableLabel(const QString& table) {
    if (table == QLatin1String("steps")) return QObject::tr("Steps");
    if (table == QLatin1String("layer_steps")) return QObject::tr("Layer rows");
    if (table == QLatin1String("evals")) return QObject::tr("Evaluations");
    if (table == QLatin1String("layers")) return QObject::tr("Layers");
    if (table == QLatin1String("op_steps")) return QObject::tr("Op statistics");
    if (table == QLatin1String("what_if_steps")) return QObject::tr("What-if statistics");
    if (table == QLatin1String("block_scale_steps")) return QObject::tr("Block scales");
    if (table == QLatin1String("checkpoints")) return QObject::tr("Checkpoints");
    return QObject::tr("Events");
}

}  // namespace

QStringList exportTableNames() {
    // Every per-run table of the store, as `mantissa-cli export --table` offers them.
    QStringList names;
    for (const store::TableSpec* t : store::all_run_tables()) names << QString::fromLatin1(t->name);
    return names;
}

QString exportRunTable(RunStore& store, std::int64_t runId, const QString& table, RunStore::ExportFormat format,
                       const QString& path) {
    if (!exportTableNames().contains(table))
        return QObject::tr("Unknown table '%1'; use %2.").arg(table, exportTableNames().join(QStringLiteral(", ")));
    return writeAtomically(path, [&](std::ostream& out) { store.export_table(runId, table.toStdString(), format, out); });
}

QString exportRunExperiment(RunStore& store, std::int64_t runId, const QString& path) {
    std::string text;
    try {
        const RunRow run = store.run(runId);
        // Parsed and printed back: the file then holds every key, in the parser's own form, and a
        // config the parser no longer accepts is reported here rather than when it is re-run.
        const Experiment e = experiment_from_json(nlohmann::json::parse(run.config_json));
        text = experiment_to_json(e).dump(2) + "\n";
    } catch (const nlohmann::json::exception& e) {
        return QObject::tr("The run's recorded experiment is not valid JSON (%1).").arg(QString::fromStdString(e.what()));
    } catch (const std::exception& e) {
        return QObject::tr("The run's recorded experiment cannot be read back: %1").arg(QString::fromStdString(e.what()));
    }
    return writeAtomically(path, [&](std::ostream& out) { out << text; });
}

std::vector<ExportChoice> exportChoices() {
    std::vector<ExportChoice> out;
    for (const QString& t : exportTableNames()) {
        out.push_back({ExportChoice::tableFile, t, RunStore::ExportFormat::csv});
        out.push_back({ExportChoice::tableFile, t, RunStore::ExportFormat::json});
    }
    out.push_back({ExportChoice::experimentFile, {}, RunStore::ExportFormat::json});
    return out;
}

QString exportChoiceLabel(const ExportChoice& c) {
    if (c.kind == ExportChoice::experimentFile) return QObject::tr("Experiment file (to re-run it)…");
    return QObject::tr("%1 as %2…").arg(tableLabel(c.table),
                                        c.format == RunStore::ExportFormat::csv ? QStringLiteral("CSV") : QStringLiteral("JSON"));
}

QString suggestedExportName(const RunRow& run, const ExportChoice& c) {
    QString base = QString::fromStdString(run.name).trimmed();
    base.replace(QRegularExpression(QStringLiteral("[^A-Za-z0-9._-]+")), QStringLiteral("-"));
    if (base.isEmpty()) base = QStringLiteral("run-%1").arg(run.id);
    if (c.kind == ExportChoice::experimentFile) return base + QStringLiteral(".json");
    return QStringLiteral("%1_%2.%3").arg(base, c.table,
                                          c.format == RunStore::ExportFormat::csv ? QStringLiteral("csv") : QStringLiteral("json"));
}

QString exportRunWithDialog(QWidget* parent, RunStore& store, std::int64_t runId, const ExportChoice& choice) {
    RunRow run;
    try {
        run = store.run(runId);
    } catch (const std::exception& e) {
        QMessageBox::warning(parent, QObject::tr("Export"), QString::fromStdString(e.what()));
        return {};
    }
    const bool csv = choice.kind == ExportChoice::tableFile && choice.format == RunStore::ExportFormat::csv;
    const QString filter = csv ? QObject::tr("CSV files (*.csv)") : QObject::tr("JSON files (*.json)");
    const QString path = QFileDialog::getSaveFileName(parent, exportChoiceLabel(choice).remove(QChar(0x2026)),
                                                      QDir::home().filePath(suggestedExportName(run, choice)), filter);
    if (path.isEmpty()) return {};
    const QString error = choice.kind == ExportChoice::experimentFile
                              ? exportRunExperiment(store, runId, path)
                              : exportRunTable(store, runId, choice.table, choice.format, path);
    if (!error.isEmpty()) {
        QMessageBox::warning(parent, QObject::tr("Export"), error);
        return {};
    }
    return path;
}

}  // namespace mantissa::ui
