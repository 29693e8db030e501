// ChartExportDialog: asks where and how big to export one chart (or several stacked): the file, its
// format (from the suffix, or chosen in a combo that rewrites the suffix), width × height
// (defaults: the chart's current size) and, for PNG, a scale. Accepting runs exportChart(); an
// error is shown in the dialog as one sentence and the dialog stays open to fix it.
//
// Wiring: a chart's context menu "Export…" calls ChartExportDialog::exportPlot(chart, window).
// GUI thread only.
#pragma once

#include <QDialog>
#include <QList>

#include "export/chart_export.h"

class QCustomPlot;
class QComboBox;
class QDoubleSpinBox;
class QLabel;
class QLineEdit;
class QSpinBox;

namespace mantissa::ui {

class ChartExportDialog : public QDialog {
    Q_OBJECT
public:
    // `plots` are stacked one above the other when there are several. `suggestedName` is the file's
    // base name without suffix ("loss").
    explicit ChartExportDialog(QList<QCustomPlot*> plots, const QString& suggestedName = {}, QWidget* parent = nullptr);

    // Shows the dialog modally and exports when accepted; returns the path written, or empty.
    static QString exportPlot(QCustomPlot* plot, QWidget* parent, const QString& suggestedName = {});
    static QString exportPlots(const QList<QCustomPlot*>& plots, QWidget* parent, const QString& suggestedName = {});

    QString path() const;
    ChartFileFormat format() const;
    ChartExportSize size() const;
    QString errorText() const;  // what the last attempt said (empty: none, or it worked)

    void setPath(const QString& path);
    void setFormat(ChartFileFormat format);

public slots:
    // Exports with the dialog's values; on success accepts, otherwise shows the error.
    void accept() override;

private:
    void browse();
    void syncFormatFromPath();
    void syncPathFromFormat();
    void updateScaleEnabled();

    QList<QCustomPlot*> m_plots;
    QLineEdit* m_path = nullptr;
    QComboBox* m_format = nullptr;
    QSpinBox* m_width = nullptr;
    QSpinBox* m_height = nullptr;
    QDoubleSpinBox* m_scale = nullptr;
    QLabel* m_error = nullptr;
    bool m_syncing = false;
};

}  // namespace mantissa::ui
