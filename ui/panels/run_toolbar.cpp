// RunToolBar: run actions, pace and "pause at step" (see run_toolbar.h).
#include "panels/run_toolbar.h"

#include <QAction>
#include <QActionGroup>
#include <QComboBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QMenu>
#include <QSpinBox>

#include <climits>
#include <cmath>

namespace mantissa::ui {

namespace {
// A label and its control as one toolbar item, so an overflowing toolbar moves them together.
QWidget* labelled(const QString& text, QWidget* control, QWidget* parent) {
    auto* box = new QWidget(parent);
    auto* layout = new QHBoxLayout(box);
    layout->setContentsMargins(6, 0, 6, 0);
    layout->setSpacing(4);
    auto* label = new QLabel(text, box);
    label->setBuddy(control);
    layout->addWidget(label);
    layout->addWidget(control);
    return box;
}
}  // namespace

const QList<double>& RunToolBar::paceChoices() {
    static const QList<double> choices = {1, 2, 5, 10, 20, 50, 100, 200, 0};
    return choices;
}

QString RunToolBar::paceText(double stepsPerSecond) {
    if (!(stepsPerSecond > 0)) return tr("as fast as possible");
    if (stepsPerSecond == 1) return tr("1 step/s");
    return tr("%1 steps/s").arg(QLocale().toString(stepsPerSecond, 'g', 4));
}

RunToolBar::RunToolBar(QWidget* parent) : QToolBar(tr("Run"), parent) {
    setObjectName(QStringLiteral("runToolBar"));
    setToolButtonStyle(Qt::ToolButtonTextBesideIcon);

    m_pace = new QComboBox(this);
    m_pace->setObjectName(QStringLiteral("paceCombo"));
    m_pace->setSizeAdjustPolicy(QComboBox::AdjustToContents);
    m_pace->setToolTip(tr("How many training steps a second the run takes, before and during a run: slow it "
                          "down so a class can follow each change on the charts, or let it run as fast as the "
                          "machine goes. The waits are not counted as training time."));
    m_paceMenu = new QMenu(tr("P&ace"), this);
    m_paceMenu->setToolTipsVisible(true);
    m_paceGroup = new QActionGroup(this);
    m_paceGroup->setExclusive(true);
    for (double pace : paceChoices()) m_pace->addItem(paceText(pace), pace);
    m_pace->setCurrentIndex(m_pace->count() - 1);  // as fast as possible
    syncMenu();
    connect(m_pace, &QComboBox::activated, this, [this](int index) {
        syncMenu();
        emit paceChosen(m_pace->itemData(index).toDouble());
    });

    m_pauseAt = new QSpinBox(this);
    m_pauseAt->setObjectName(QStringLiteral("pauseAtStep"));
    m_pauseAt->setRange(0, INT_MAX);
    m_pauseAt->setSpecialValueText(tr("off"));
    m_pauseAt->setKeyboardTracking(false);  // a number is chosen by Enter, not by each digit typed
    m_pauseAt->setAccelerated(true);
    m_pauseAt->setMinimumWidth(m_pauseAt->fontMetrics().horizontalAdvance(QStringLiteral("0000000")) + 30);
    m_pauseAt->setToolTip(tr("Pause the run once it has taken this many steps (type a number and press Enter; "
                             "0 or \"off\" cancels). It works before a run too, and clears itself when reached; "
                             "the pause and the resume are logged in the Events panel."));
    connect(m_pauseAt, &QSpinBox::valueChanged, this, [this](int step) {
        if (!m_updating) emit pauseAtChosen(step > 0 ? step : -1);
    });
}

void RunToolBar::setActions(const QList<QAction*>& run, const QList<QAction*>& file) {
    addActions(run);
    addSeparator();
    addWidget(labelled(tr("Pace"), m_pace, this));
    addWidget(labelled(tr("Pause at step"), m_pauseAt, this));
    addSeparator();
    addActions(file);
}

int RunToolBar::indexOf(double stepsPerSecond) {
    const double pace = std::isfinite(stepsPerSecond) && stepsPerSecond > 0 ? stepsPerSecond : 0;
    for (int i = 0; i < m_pace->count(); ++i)
        if (m_pace->itemData(i).toDouble() == pace) return i;
    // A lesson's own pace: in order among the others, before "as fast as possible".
    int at = 0;
    while (at < m_pace->count() - 1 && m_pace->itemData(at).toDouble() < pace) ++at;
    m_pace->insertItem(at, paceText(pace), pace);
    return at;
}

void RunToolBar::setPace(double stepsPerSecond) {
    m_pace->setCurrentIndex(indexOf(stepsPerSecond));
    syncMenu();
}

double RunToolBar::pace() const { return m_pace->currentData().toDouble(); }

void RunToolBar::setPauseAt(std::int64_t step) {
    m_updating = true;
    m_pauseAt->setValue(step > 0 ? static_cast<int>(std::min<std::int64_t>(step, INT_MAX)) : 0);
    m_updating = false;
}

bool RunToolBar::focusPauseAt() {
    if (!m_pauseAt->isVisible()) return false;
    m_pauseAt->setFocus(Qt::ShortcutFocusReason);
    m_pauseAt->selectAll();
    return true;
}

// The menu mirrors the combo's items (a lesson may have added one) and its choice.
void RunToolBar::syncMenu() {
    if (m_paceMenu->actions().size() != m_pace->count()) {
        m_paceMenu->clear();
        for (QAction* a : m_paceGroup->actions()) m_paceGroup->removeAction(a);
        for (int i = 0; i < m_pace->count(); ++i) {
            QAction* a = m_paceMenu->addAction(m_pace->itemText(i));
            a->setCheckable(true);
            a->setData(m_pace->itemData(i));
            m_paceGroup->addAction(a);
            connect(a, &QAction::triggered, this, [this, a] {
                m_pace->setCurrentIndex(m_pace->findData(a->data()));
                emit paceChosen(a->data().toDouble());
            });
        }
    }
    const QList<QAction*> actions = m_paceMenu->actions();
    for (int i = 0; i < actions.size(); ++i) actions[i]->setChecked(i == m_pace->currentIndex());
}

}  // namespace mantissa::ui
