// LessonPanel: the lesson's title, concept and what to watch (see lesson_panel.h).
#include "classroom/lesson_panel.h"

#include <QLabel>
#include <QLocale>
#include <QVBoxLayout>

namespace mantissa::ui {

namespace {
QLabel* wrappedLabel() {
    auto* label = new QLabel;
    label->setWordWrap(true);
    label->setTextFormat(Qt::PlainText);
    label->setTextInteractionFlags(Qt::TextSelectableByMouse);
    label->setAlignment(Qt::AlignLeft | Qt::AlignTop);
    return label;
}
}  // namespace

LessonPanel::LessonPanel(QWidget* parent) : QWidget(parent) {
    m_title = wrappedLabel();
    QFont big = m_title->font();
    big.setPointSizeF(big.pointSizeF() * 1.25);
    big.setBold(true);
    m_title->setFont(big);
    m_concept = wrappedLabel();
    m_watchHeading = new QLabel(tr("What to watch"));
    QFont bold = m_watchHeading->font();
    bold.setBold(true);
    m_watchHeading->setFont(bold);
    m_watch = wrappedLabel();
    m_pace = wrappedLabel();
    m_pace->setEnabled(false);  // drawn as secondary text

    auto* layout = new QVBoxLayout(this);
    layout->addWidget(m_title);
    layout->addWidget(m_concept);
    layout->addSpacing(6);
    layout->addWidget(m_watchHeading);
    layout->addWidget(m_watch);
    layout->addSpacing(6);
    layout->addWidget(m_pace);
    layout->addStretch(1);
    setLesson(LessonSpec{});
}

void LessonPanel::setLesson(const LessonSpec& lesson) {
    m_lesson = lesson;
    m_title->setText(QString::fromStdString(lesson.title));
    m_concept->setText(QString::fromStdString(lesson.text));
    m_watch->setText(QString::fromStdString(lesson.watch));
    m_watchHeading->setVisible(!lesson.watch.empty());
    const QString rate = lesson.pace == 1 ? tr("1 step") : tr("%1 steps").arg(QLocale().toString(lesson.pace, 'g', 4));
    m_pace->setText(lesson.pace > 0 ? tr("The lesson runs at %1 a second; Pace in the Run toolbar changes it, and "
                                         "Pause at step stops it where you want to talk.")
                                          .arg(rate)
                                    : QString());
    m_pace->setVisible(lesson.pace > 0 && !lesson.title.empty());
    if (lesson.title.empty()) m_concept->setText(tr("This experiment has no lesson. Open a classroom preset "
                                                    "(resources/experiments/lessons) to see one here."));
}

QString LessonPanel::titleText() const { return m_title->text(); }
QString LessonPanel::conceptText() const { return m_concept->text(); }
QString LessonPanel::watchText() const { return m_watch->text(); }
QString LessonPanel::paceText() const { return m_pace->text(); }

}  // namespace mantissa::ui
