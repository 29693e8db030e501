// LessonPanel: a classroom preset's lesson, kept on screen for the whole run: its title, the
// concept in a few sentences, what to watch on the charts, and the pace the file sets. The notice
// bar announces a lesson once; this panel is what a class reads while the run goes on. The main
// window sizes its dock to the text (heightForWidth). GUI thread only.
#pragma once

#include <QWidget>

#include "config/experiment.h"

class QLabel;

namespace mantissa::ui {

class LessonPanel : public QWidget {
    Q_OBJECT
public:
    explicit LessonPanel(QWidget* parent = nullptr);

    void setLesson(const LessonSpec& lesson);
    bool hasLesson() const { return !m_lesson.title.empty(); }
    const LessonSpec& lesson() const { return m_lesson; }

    QString titleText() const;
    QString conceptText() const;
    QString watchText() const;
    QString paceText() const;
    QLabel* watchLabel() const { return m_watch; }

private:
    LessonSpec m_lesson;
    QLabel* m_title = nullptr;
    QLabel* m_concept = nullptr;
    QLabel* m_watchHeading = nullptr;
    QLabel* m_watch = nullptr;
    QLabel* m_pace = nullptr;
};

}  // namespace mantissa::ui
