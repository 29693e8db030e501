// RunViewer's layout: which panels stand beside the events and how the charts and the bottom row
// share the window. Left to the splitters, a language model's run (its Sample and What-if panels
// side by side, each as wide as its own controls want) gave the events a clipped filter box and
// the charts a fifth of the height squeezed seven ways. So:
//   - a language model's samples and the what-if table are tabs of one widget (the sample raised
//     first; a panel that appears while a run is followed is raised unless a person has picked a
//     tab), as the live window has them; the block-scale views stand beside them, so a format's
//     SQNR and its blocks' scales are read together;
//   - the bottom row is as tall as its panels read (the usableHeight the live window's DockLayout
//     gives the same panels; a fifth of the height for the events alone), at most half the height;
//     the charts take the rest, each keeping its minimum plot, and scroll when that is too little;
//   - across it each shown widget gets the width it needs (the events eventsMinWidth, the others
//     their minimum), and the rest goes by shares: events 2, the tabs 3, the block scales 4 (their
//     two plots side by side want the width).
// Chosen once the window is laid out and again when a panel appears; a person's splitter drags
// stand until then.
#include "history/run_viewer.h"

#include <QShowEvent>
#include <QSplitter>
#include <QTabWidget>
#include <QTimer>

#include <algorithm>
#include <iterator>
#include <utility>

#include "block_scales/block_scale_panel.h"
#include "panels/events_panel.h"
#include "panels/sample_panel.h"
#include "panels/what_if_panel.h"

namespace mantissa::ui {

namespace {

constexpr int eventsMinWidth = 340;  // px: the filter box, and Step, Time, Kind and a message's start

}  // namespace

int RunViewer::shownPanels() const {
    return (m_panels->indexOf(m_sample) >= 0 ? 1 : 0) | (m_panels->indexOf(m_whatIf) >= 0 ? 2 : 0) |
           (m_blockScales->isVisibleTo(this) ? 4 : 0);
}

void RunViewer::showPanels() {
    const std::pair<QWidget*, QString> tabs[] = {{m_sample, tr("Sample")}, {m_whatIf, tr("What-if")}};
    const bool shows[] = {m_series.textRun(), !m_series.whatIf().empty()};
    QWidget* added = nullptr;  // the first tab this call adds
    int position = 0;          // the tabs keep the order above
    for (std::size_t i = 0; i < std::size(tabs); ++i) {
        const auto& [panel, title] = tabs[i];
        const int index = m_panels->indexOf(panel);
        if (shows[i] && index < 0) {
            m_panels->insertTab(position, panel, title);
            if (!added) added = panel;
        } else if (!shows[i] && index >= 0) {
            m_panels->removeTab(index);  // stays a hidden child of the tab widget
        }
        position += shows[i] ? 1 : 0;
    }
    if (added && !m_panelPicked) m_panels->setCurrentWidget(added);
    m_panels->setVisible(m_panels->count() > 0);
    const bool blockScales = !m_series.blockScales().empty();
    m_blockScales->setVisible(blockScales);

    if (shownPanels() == m_laidOutPanels) return;
    // A window of its own not shown yet grows to the main window's size for the block scales' two
    // plots beside the other panels.
    if (blockScales && isWindow() && !isVisible()) resize(std::max(width(), 1500), std::max(height(), 900));
    if (isVisible()) QTimer::singleShot(0, this, &RunViewer::layOutPanels);  // else when shown
}

void RunViewer::showEvent(QShowEvent* event) {
    QWidget::showEvent(event);
    QTimer::singleShot(0, this, &RunViewer::layOutPanels);  // once the window is laid out
}

void RunViewer::layOutPanels() {
    const int panels = shownPanels();
    if (!isVisible() || panels == m_laidOutPanels) return;
    m_laidOutPanels = panels;

    const int height = m_splitter->height();
    int usable = 0;  // what the tallest shown panel needs to be read
    if (m_panels->indexOf(m_sample) >= 0) usable = SamplePanel::usableHeight;
    if (m_panels->indexOf(m_whatIf) >= 0) usable = std::max(usable, WhatIfPanel::usableHeight);
    if (m_panels->count() > 0) {
        // ... in a page of the tab widget: add what it draws around a page (its tab bar, when shown).
        int pages = 0;
        for (int i = 0; i < m_panels->count(); ++i) pages = std::max(pages, m_panels->widget(i)->minimumSizeHint().height());
        usable += m_panels->minimumSizeHint().height() - pages;
    }
    if (m_blockScales->isVisibleTo(this)) usable = std::max(usable, BlockScalePanel::usableHeight);
    const int bottom = std::min(std::max(usable, height / 5), height / 2);
    m_splitter->setSizes({height - bottom, bottom});

    // m_bottom holds the events, the tabs and the block scales, in that order.
    const bool shown[] = {true, m_panels->count() > 0, m_blockScales->isVisibleTo(this)};
    const int needs[] = {std::max(eventsMinWidth, m_events->minimumSizeHint().width()),
                         m_panels->minimumSizeHint().width(), m_blockScales->minimumSizeHint().width()};
    const int shares[] = {2, 3, 4};
    int width = m_bottom->width();
    int shareTotal = 0;
    for (int i = 0; i < 3; ++i) {
        m_bottom->setStretchFactor(i, shown[i] ? shares[i] : 0);  // the shares again as the window resizes
        if (!shown[i]) continue;
        width -= needs[i] + (i > 0 ? m_bottom->handleWidth() : 0);
        shareTotal += shares[i];
    }
    const int spare = std::max(width, 0);
    QList<int> sizes;
    for (int i = 0; i < 3; ++i) sizes << (shown[i] ? needs[i] + spare * shares[i] / shareTotal : 0);
    m_bottom->setSizes(sizes);
}

}  // namespace mantissa::ui
