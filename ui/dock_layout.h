// DockLayout: the sizes of the main window's docks and charts, chosen rather than left to what a
// resize happens to leave. Three decisions live here:
//   - the first layout: the side docks' widths and the bottom docks short (the charts take the
//     height), Layers and Events side by side;
//   - small windows (below compactWidth x compactHeight, e.g. a 1024x700 laptop screen): each chart
//     keeps a plot of at least minPlotHeight px and the chart area scrolls instead of squeezing five
//     charts into slivers; the bottom docks keep to their minimum height (the Layers table's is
//     three rows, LayersPanel) and the Layers dock gets the width its columns need (at most 70 %),
//     Events the rest; a table whose columns cannot fit even so (a transformer's, with its Kind and
//     Format (why) columns) scrolls sideways in 55 %, so the events or the sample beside it stay
//     readable. Decided when the window crosses the threshold (or first shows), so a person's own
//     splitter drags stand until then;
//   - narrow windows (below compactWidth): the Experiment and Precision forms share the left side
//     as two tabs, so the charts get the width of one of them (at 1024 px, about 670 px of charts
//     rather than 340), and go back to their own sides when the window is widened again. Only
//     forms where the first layout put them (docked, left and right) are tabbed, and only the
//     tabs made here are undone: a dock a person has moved stays where they put it;
//   - the Layers dock, in a small window, follows its columns when they change width (a run's
//     numbers arrive, the FP8 scale columns appear, classroom mode hides three), unless a person has
//     dragged it since; the docks tabbed with the Events are each in a scroll area
//     (main_window.cpp), so a tab whose content grows (the What-if heat map's, when a run starts)
//     never takes the width the Layers columns need;
//   - the Lesson dock as wide as a comfortable line (wider, up to 30 % of the window, for a lesson
//     too long to read whole in the column's height at that line) and as tall as its
//     text, from the height the experiment form can spare: the form keeps what it shows (in
//     classroom mode, the name and the run buttons) up to 40 % of the column, and the lesson
//     scrolls if it must; fitted again whenever that column's height changes (the bottom docks
//     grow for a raised Sample or histogram tab, the window is resized), so the form gives up
//     its height before the lesson does;
//   - the tab bars of tabbed docks show whole titles, scrolling when they do not fit, never "Eve…";
//   - the gradient histogram, the What-if heat map, the Block scales and a language model's Sample,
//     tabs behind the events, at a usable height when their tab is raised
//     (GradientHistogramView::usableHeight, WhatIfPanel's, BlockScalePanel's, SamplePanel's; the
//     bottom docks go back to their height when another tab is),
//     and the histogram at a usable size when floated, so its ticks and range labels never pile up.
// GUI thread only; the docks belong to the window.
#pragma once

#include <QObject>

class QDockWidget;
class QMainWindow;
class QTimer;

namespace mantissa::ui {

class ChartsPanel;
class LayersPanel;
class LessonPanel;

class DockLayout : public QObject {
    Q_OBJECT
public:
    struct Docks {
        QDockWidget* experiment = nullptr;
        QDockWidget* precision = nullptr;
        QDockWidget* layers = nullptr;
        QDockWidget* events = nullptr;
        QDockWidget* lesson = nullptr;
        QDockWidget* histogram = nullptr;
        QDockWidget* sample = nullptr;
        QDockWidget* whatIf = nullptr;
        QDockWidget* blockScales = nullptr;
    };
    static constexpr int compactWidth = 1280;   // px: narrower or
    static constexpr int compactHeight = 820;   // shorter than this is a small window
    static constexpr int minPlotHeight = 72;    // px of plot in each chart, legends and axes apart
    static constexpr int lessonWidth = 380;     // px: about 55 characters a line
    static constexpr int sideFormWidth = 270;   // px: the Precision dock's first width
    static constexpr int maxLayersShare = 70;   // %: the most of a small window's width the Layers dock takes
    static constexpr int scrollingLayersShare = 55;  // %: its share where its columns scroll anyway (a large window's)

    DockLayout(QMainWindow* window, const Docks& docks, ChartsPanel* charts, LayersPanel* layers,
               LessonPanel* lesson);

    void applyInitialSizes();
    // After the window's size changed: the small-window layout when it crosses the threshold.
    void windowResized();
    bool compact() const { return m_compact == 1; }
    // Whether the side forms are tabs this layout made (and undoes when the window is widened): the
    // window saves it with its state, so that a window closed narrow and opened wide gets its two
    // sides back.
    bool formsTabbed() const { return m_formsTabbed; }
    void setFormsTabbed(bool tabbed) { m_formsTabbed = tabbed; }
    // The Lesson dock sized to its text (call once the window has laid it out).
    void fitLesson();
    // In a small window: the Layers dock as wide as its columns (compactLayersWidth), unless
    // it is not the width this layout gave it last (a person dragged it). Follows the columns on
    // its own; public for tests.
    void fitLayers();

protected:
    bool eventFilter(QObject* watched, QEvent* event) override;

private:
    void polishTabBars();
    void noteLayersWidth();  // the width the layout gave the Layers dock, once laid out
    void resizeLayers(int width);  // and the dock beside it the rest of their width
    void applyCompact(bool compact);
    // Narrow: Precision as a tab behind Experiment; wide again: Precision back on the right.
    void tabSideForms(bool narrow);
    void histogramShown(bool shown);
    // A bottom tab raised (shown) or left: the bottom docks at the height that gives `view`
    // `usable` px, and back to their height before when it goes.
    void bottomTabShown(QDockWidget* dock, QWidget* view, int usable, bool shown);
    void histogramFloated(bool floating);
    int layersColumnsWidth(int last = -1) const;  // the shown columns up to `last` (-1: all), scroll bar and frame
    // The Layers dock's width in a small window, `around` the table: its columns' width, at most
    // maxLayersShare % of the window; scrollingLayersShare % where the columns up to Lost updates do
    // not fit even in that.
    int compactLayersWidth(int around) const;
    bool formAboveLesson() const;    // the Experiment form docked in the lesson's column
    int formTabBarHeight() const;    // the tab bar over the form when the forms are tabs, else 0
    int lessonColumnHeight() const;
    int formNeedHeight() const;      // the height of what the Experiment form shows, at its width  // the form's and the lesson's height together; -1: no such column

    QMainWindow* m_window;
    Docks m_docks;
    ChartsPanel* m_charts;
    LayersPanel* m_layers;
    LessonPanel* m_lesson;
    int m_compact = -1;  // -1: not decided yet
    int m_narrow = -1;   // likewise, for the side forms' tabs
    bool m_formsTabbed = false;  // tabSideForms made the tabs (and so may undo them)
    int m_bottomBefore = 0;  // the bottom docks' height before the histogram's tab enlarged them
    int m_layersWidth = -1;  // the Layers dock's width as this layout left it; -1: not set (or settling)
    QTimer* m_layersRefit = nullptr;
    int m_lessonColumn = -1;  // the column's height fitLesson fitted the lesson to; -1: none
};

}  // namespace mantissa::ui
