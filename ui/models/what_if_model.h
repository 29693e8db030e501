// WhatIfModel: one statistics step of a run's what-if statistics (WhatIfSeries) as a table, rows
// the layers in model order, columns the formats in the run's order; each cell the chosen metric
// (SQNR, underflow or saturation) of the chosen tensor (x, W or dy) in words and on the warm colour
// ramp of what_if_scale.h. The cell of the format a layer ran in at that step is marked
// (CurrentFormatRole, bold; WhatIfDelegate frames it): its numbers are the layer's own operands'.
// Every cell's tooltip gives all three numbers of all three tensors and the values measured.
//
// It shows the latest step and follows the run as steps arrive, until showStep() picks an earlier
// one (by step, so thinning the series' older snapshots never moves what is shown); followLatest()
// follows again. sync() after new data: a new row or column resets the model, anything else
// repaints the cells in place.
//
// GUI thread only; the series must outlive the model or be unset first.
#pragma once

#include <QAbstractTableModel>

#include <cstdint>
#include <optional>

#include "series/what_if_series.h"

namespace mantissa::ui {

class WhatIfModel : public QAbstractTableModel {
    Q_OBJECT
public:
    static constexpr int ValueRole = Qt::UserRole + 1;          // double: the metric shown (inf/NaN as measured)
    static constexpr int WarmthRole = Qt::UserRole + 2;         // double: 0 neutral .. 1 red; NaN no colour
    static constexpr int CurrentFormatRole = Qt::UserRole + 3;  // bool: the layer ran in this format
    static constexpr int MeasuredRole = Qt::UserRole + 4;       // bool: the step has this (layer, format)

    explicit WhatIfModel(QObject* parent = nullptr);

    void setSeries(const WhatIfSeries* series);  // resets, and follows the latest step
    void sync();
    const WhatIfSeries* series() const { return m_series; }

    void setTensor(WhatIfTensor tensor);
    void setMetric(WhatIfMetric metric);
    WhatIfTensor tensor() const { return m_tensor; }
    WhatIfMetric metric() const { return m_metric; }

    void followLatest();
    // Shows `step` (or the nearest kept statistics step before it); stops following.
    void showStep(std::int64_t step);
    bool following() const { return m_follow; }
    // The snapshot shown (WhatIfSeries::snapshots()), nullopt when there is none.
    std::optional<std::size_t> shownSnapshot() const;
    std::optional<std::int64_t> shownStep() const;

    int rowCount(const QModelIndex& parent = {}) const override;
    int columnCount(const QModelIndex& parent = {}) const override;
    QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

signals:
    void shownStepChanged();  // another step is shown (followed, picked, or the series changed)

private:
    QString toolTip(std::size_t snapshot, std::size_t layer, std::size_t format) const;
    void repaint();

    const WhatIfSeries* m_series = nullptr;
    WhatIfTensor m_tensor = WhatIfTensor::input;
    WhatIfMetric m_metric = WhatIfMetric::sqnr_db;
    bool m_follow = true;
    std::int64_t m_step = 0;  // the step picked, when not following
    std::uint64_t m_layout = 0, m_revision = 0;
    std::optional<std::int64_t> m_lastShown;  // for shownStepChanged
};

}  // namespace mantissa::ui
