// DockLayout: the main window's dock and chart sizes (see dock_layout.h).
#include "dock_layout.h"

#include <QDockWidget>
#include <QEvent>
#include <QHeaderView>
#include <QMainWindow>
#include <QPointer>
#include <QScrollArea>
#include <QScrollBar>
#include <QTabBar>
#include <QTableView>
#include <QTimer>

#include <algorithm>
#include <cstdlib>

#include "block_scales/block_scale_panel.h"
#include "charts/charts_panel.h"
#include "classroom/lesson_panel.h"
#include "histogram/gradient_histogram_view.h"
#include "models/layer_table_model.h"
#include "panels/layers_panel.h"
#include "panels/sample_panel.h"
#include "panels/what_if_panel.h"

namespace mantissa::ui {

DockLayout::DockLayout(QMainWindow* window, const Docks& docks, ChartsPanel* charts, LayersPanel* layers,
                       LessonPanel* lesson)
    : QObject(window), m_window(window), m_docks(docks), m_charts(charts), m_layers(layers), m_lesson(lesson) {
    // A chart's minimum height is its legend's and axes' plus this much plot; the chart area
    // scrolls when the window cannot give every chart that (charts_panel.cpp).
    for (ChartView* chart : m_charts->charts()) chart->axisRect()->setMinimumSize(50, minPlotHeight);
    if (m_docks.histogram) {
        connect(m_docks.histogram, &QDockWidget::visibilityChanged, this, &DockLayout::histogramShown);
        connect(m_docks.histogram, &QDockWidget::topLevelChanged, this, &DockLayout::histogramFloated);
    }
    if (m_docks.sample)
        connect(m_docks.sample, &QDockWidget::visibilityChanged, this, [this](bool shown) {
            bottomTabShown(m_docks.sample, m_docks.sample->widget(), SamplePanel::usableHeight, shown);
        });
    if (m_docks.whatIf)
        connect(m_docks.whatIf, &QDockWidget::visibilityChanged, this, [this](bool shown) {
            bottomTabShown(m_docks.whatIf, m_docks.whatIf->widget(), WhatIfPanel::usableHeight, shown);
        });
    if (m_docks.blockScales)
        connect(m_docks.blockScales, &QDockWidget::visibilityChanged, this, [this](bool shown) {
            bottomTabShown(m_docks.blockScales, m_docks.blockScales->widget(), BlockScalePanel::usableHeight, shown);
        });
    // The Layers table's columns change width as a run's numbers arrive, a column shows or hides
    // (the FP8 scales, classroom mode); once they have settled, the dock follows them.
    m_layersRefit = new QTimer(this);
    m_layersRefit->setSingleShot(true);
    m_layersRefit->setInterval(0);
    connect(m_layersRefit, &QTimer::timeout, this, &DockLayout::fitLayers);
    connect(m_layers->view()->horizontalHeader(), &QHeaderView::sectionResized, this, [this] {
        if (m_compact == 1) m_layersRefit->start();
    });
    // The window's dock tab bars are made by Qt as docks are tabbed, each set to elide its titles;
    // they are polished before they are shown.
    m_window->installEventFilter(this);
    polishTabBars();
    // The left column loses height when the bottom docks grow (a raised Sample or histogram tab)
    // or the window shrinks: the lesson is fitted again, so the form gives up its height first.
    if (m_docks.lesson) m_docks.lesson->installEventFilter(this);
}

bool DockLayout::eventFilter(QObject* watched, QEvent* event) {
    if (watched == m_window && event->type() == QEvent::ChildPolished) polishTabBars();
    if (watched == m_docks.lesson && event->type() == QEvent::Resize && m_lessonColumn > 0 &&
        lessonColumnHeight() != m_lessonColumn)
        QTimer::singleShot(0, this, &DockLayout::fitLesson);  // once the column has its new height
    return QObject::eventFilter(watched, event);
}

void DockLayout::polishTabBars() {
    // Whole titles: "Events", not "Eve…". Tabs that do not fit scroll behind the bar's arrows, and
    // each tab's tooltip is its title (QMainWindow sets it).
    for (QTabBar* bar : m_window->findChildren<QTabBar*>(Qt::FindDirectChildrenOnly)) {
        if (bar->elideMode() == Qt::ElideNone && bar->usesScrollButtons()) continue;
        bar->setElideMode(Qt::ElideNone);
        bar->setUsesScrollButtons(true);
    }
}

void DockLayout::applyInitialSizes() {
    m_window->resizeDocks({m_docks.experiment, m_docks.precision}, {290, sideFormWidth}, Qt::Horizontal);
    // The bottom docks start short (their minimum, three layer rows, where that is more) and the
    // charts take the rest of the height; drag the splitter to see more rows.
    m_window->resizeDocks({m_docks.layers}, {150}, Qt::Vertical);
    m_window->resizeDocks({m_docks.layers}, {820}, Qt::Horizontal);  // of 1500: the events take the rest
}

int DockLayout::layersColumnsWidth(int last) const {
    const QTableView* view = m_layers->view();
    int width = 2 * view->frameWidth() + view->verticalScrollBar()->sizeHint().width();
    // The header resizes its sections to their contents (LayersPanel): their sizes are the need.
    const int end = last < 0 ? view->model()->columnCount() : std::min(last + 1, view->model()->columnCount());
    for (int c = 0; c < end; ++c)
        if (!view->isColumnHidden(c)) width += view->horizontalHeader()->sectionSize(c);
    return width;
}

int DockLayout::compactLayersWidth(int around) const {
    const int window = m_window->width();
    const int most = window * maxLayersShare / 100;
    // The columns every run fills end with Lost updates (the FP8 scale columns after it come and
    // go): where even those do not fit, the table scrolls sideways at any width this row can give
    // it, and taking all of that would leave the events (or a language model's sample) a sliver.
    if (layersColumnsWidth(LayerTableModel::LostUpdates) + around > most) return window * scrollingLayersShare / 100;
    return std::min(layersColumnsWidth() + around, most);
}

void DockLayout::applyCompact(bool compact) {
    m_compact = compact ? 1 : 0;
    const int width = m_window->width();
    // The table's columns first (compactLayersWidth), the events beside it; in a large window the
    // first layout's shares.
    const int around = std::max(0, m_docks.layers->width() - m_layers->width());  // the dock's frame and margins
    const int layers = compact ? compactLayersWidth(around) : width * 55 / 100;
    resizeLayers(layers);
    if (compact) m_window->resizeDocks({m_docks.layers}, {m_docks.layers->minimumSizeHint().height()}, Qt::Vertical);
}

void DockLayout::noteLayersWidth() {
    m_layersWidth = -1;  // until the window has laid the docks out
    QTimer::singleShot(0, this, [this] { m_layersWidth = m_docks.layers->width(); });
}

void DockLayout::fitLayers() {
    QDockWidget* dock = m_docks.layers;
    if (m_compact != 1 || dock->isFloating() || !dock->isVisible() ||
        m_window->dockWidgetArea(dock) != Qt::BottomDockWidgetArea)
        return;
    if (m_layersWidth < 0) {  // the last fit is still being laid out: after it
        m_layersRefit->start();
        return;
    }
    if (std::abs(dock->width() - m_layersWidth) > 2) return;  // not the width given here: a person's drag
    // The columns, with what the dock puts around the table (its frame and margins).
    const int around = std::max(0, dock->width() - m_layers->width());
    const int need = compactLayersWidth(around);
    if (std::abs(dock->width() - need) <= 2) return;
    resizeLayers(need);
}

void DockLayout::resizeLayers(int width) {
    // With the dock beside it named too: resizeDocks gives a single dock only part of what it asks.
    QDockWidget* beside = nullptr;
    for (QDockWidget* d : {m_docks.events, m_docks.histogram, m_docks.whatIf, m_docks.blockScales, m_docks.sample})
        if (!beside && d && d->isVisible() && !d->isFloating() &&
            m_window->dockWidgetArea(d) == Qt::BottomDockWidgetArea && !d->visibleRegion().isEmpty() &&
            !m_window->tabifiedDockWidgets(m_docks.layers).contains(d))
            beside = d;
    if (beside)
        m_window->resizeDocks({m_docks.layers, beside},
                              {width, std::max(0, m_docks.layers->width() + beside->width() - width)}, Qt::Horizontal);
    else
        m_window->resizeDocks({m_docks.layers}, {width}, Qt::Horizontal);
    noteLayersWidth();
}

void DockLayout::histogramShown(bool shown) {
    bottomTabShown(m_docks.histogram, m_docks.histogram->findChild<GradientHistogramView*>(),
                   GradientHistogramView::usableHeight, shown);
}

void DockLayout::bottomTabShown(QDockWidget* dock, QWidget* view, int usable, bool shown) {
    if (dock->isFloating() || m_window->dockWidgetArea(dock) != Qt::BottomDockWidgetArea) return;
    if (shown) {
        // Once the raised tab is laid out: the bottom docks' height that leaves the view its
        // usable height, beside the dock's title, the tab bar and a sideways scroll bar.
        QPointer<QWidget> target(view);
        QTimer::singleShot(0, this, [this, dock, target, usable] {
            if (!target || !dock->isVisible() || target->height() >= usable) return;
            const int area = m_docks.layers->height();
            if (m_bottomBefore == 0) m_bottomBefore = area;
            const int overhead = std::max(0, area - target->height());
            m_window->resizeDocks({dock}, {usable + overhead}, Qt::Vertical);
        });
    } else if (!shown && m_bottomBefore > 0) {
        const int before = m_bottomBefore;
        m_bottomBefore = 0;
        QTimer::singleShot(0, this, [this, before] { m_window->resizeDocks({m_docks.layers}, {before}, Qt::Vertical); });
    }
}

void DockLayout::histogramFloated(bool floating) {
    if (!floating) return;
    m_bottomBefore = 0;  // it left the bottom docks; their height is theirs again
    QDockWidget* dock = m_docks.histogram;
    QTimer::singleShot(0, dock, [dock] {
        dock->resize(std::max(dock->width(), GradientHistogramView::usableWidth),
                     std::max(dock->height(), GradientHistogramView::usableHeight));
    });
}

void DockLayout::tabSideForms(bool narrow) {
    QDockWidget* form = m_docks.experiment;
    QDockWidget* precision = m_docks.precision;
    if (!form || !precision) return;
    if (narrow) {
        if (form->isFloating() || precision->isFloating() || form->isHidden() || precision->isHidden() ||
            m_window->dockWidgetArea(form) != Qt::LeftDockWidgetArea ||
            m_window->dockWidgetArea(precision) != Qt::RightDockWidgetArea)
            return;
        m_window->tabifyDockWidget(form, precision);
        form->raise();  // the form a run starts from; Precision is one click away
        m_formsTabbed = true;
        return;
    }
    if (!m_formsTabbed) return;
    m_formsTabbed = false;
    if (!m_window->tabifiedDockWidgets(form).contains(precision)) return;  // moved since: the person's place
    m_window->addDockWidget(Qt::RightDockWidgetArea, precision);         // out of the tabs, to its side
    QTimer::singleShot(0, this, [this] {
        m_window->resizeDocks({m_docks.precision}, {sideFormWidth}, Qt::Horizontal);
    });
}

void DockLayout::windowResized() {
    const bool narrow = m_window->width() < compactWidth;
    if (narrow && m_narrow != 1) tabSideForms(true);
    // A wide first window keeps its layout (as below), but for the tabs a narrow one left.
    else if (!narrow && (m_narrow == 1 || (m_narrow < 0 && m_formsTabbed))) tabSideForms(false);
    m_narrow = narrow ? 1 : 0;
    const bool compact = m_window->width() < compactWidth || m_window->height() < compactHeight;
    if (m_compact < 0 && !compact) {
        m_compact = 0;  // a large window keeps the layout it has (the first, or the one restored)
        return;
    }
    if (compact == (m_compact == 1)) return;
    m_compact = compact ? 1 : 0;
    // After the window has laid its docks out at the new size: sizes asked for before that are
    // undone by it.
    QTimer::singleShot(0, this, [this] { applyCompact(m_compact == 1); });
}

int DockLayout::formTabBarHeight() const {
    // The form's tab bar, when the forms are tabs, stands between the two docks: it is part of the
    // form's share, not of the lesson's.
    int tabBar = 0;
    for (const QTabBar* bar : m_window->findChildren<QTabBar*>(Qt::FindDirectChildrenOnly))
        for (int i = 0; bar->isVisible() && i < bar->count(); ++i)
            if (bar->tabText(i) == m_docks.experiment->windowTitle()) tabBar = bar->height();
    return tabBar;
}

bool DockLayout::formAboveLesson() const {
    QDockWidget* form = m_docks.experiment;
    return form->isVisible() && !form->isFloating() && m_window->dockWidgetArea(form) == Qt::LeftDockWidgetArea;
}

int DockLayout::lessonColumnHeight() const {
    if (!formAboveLesson()) return -1;
    return m_docks.experiment->height() + formTabBarHeight() + m_docks.lesson->height();
}

int DockLayout::formNeedHeight() const {
    // What the form shows (in classroom mode, the name and the run buttons), at the form's width:
    // its wrapped note is as tall as it reads there, not at the narrow width a plain size hint
    // assumes.
    const QDockWidget* form = m_docks.experiment;
    auto* area = qobject_cast<const QScrollArea*>(form->widget());
    if (!area || !area->widget()) return formTabBarHeight();
    const QWidget* content = area->widget();
    const int height = content->hasHeightForWidth() ? content->heightForWidth(area->viewport()->width())
                                                    : content->sizeHint().height();
    return height + form->height() - area->viewport()->height() + formTabBarHeight();
}

void DockLayout::fitLesson() {
    QDockWidget* dock = m_docks.lesson;
    QDockWidget* form = m_docks.experiment;
    m_lessonColumn = -1;
    if (!dock->isVisible() || dock->isFloating() || m_window->dockWidgetArea(dock) != Qt::LeftDockWidgetArea) return;
    // The height the text takes at a width, with what the dock adds around it.
    auto* area = qobject_cast<QScrollArea*>(dock->widget());
    const int frameHeight = area ? dock->height() - area->viewport()->height() : 0;
    const int frameWidth = area ? dock->width() - area->viewport()->width() : 0;
    const auto needAt = [&](int width) { return m_lesson->heightForWidth(width - frameWidth) + frameHeight; };
    // A comfortable line, but never more than 30 % of the window: a small one keeps its charts.
    const int widest = std::max(dock->width(), m_window->width() * 3 / 10);
    int width = std::max(dock->width(), std::min(lessonWidth, m_window->width() * 3 / 10));
    const bool withForm = formAboveLesson();
    const int column = withForm ? lessonColumnHeight() : 0;
    // The form keeps the height of what it shows, up to 40 % of the column.
    const int formKeeps = withForm ? std::min(formNeedHeight(), column * 2 / 5) : 0;
    // A long lesson (08's) that the column's height cannot hold at that line takes longer lines,
    // within the 30 %, rather than scroll: fewer lines, and "What to watch" reads whole.
    while (withForm && needAt(width) > column - formKeeps && width + 10 <= widest) width += 10;
    m_window->resizeDocks({dock}, {width}, Qt::Horizontal);
    const int need = needAt(width);
    if (withForm) {
        m_lessonColumn = column;
        // The form gives up what the lesson needs down to formKeeps; past that, the lesson scrolls.
        const int formHeight = std::max(column - need, formKeeps);
        m_window->resizeDocks({form, dock}, {std::max(formHeight, 0), column - formHeight}, Qt::Vertical);
    } else {
        m_window->resizeDocks({dock}, {need}, Qt::Vertical);
    }
}

}  // namespace mantissa::ui
