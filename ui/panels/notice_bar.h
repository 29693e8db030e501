// NoticeBar: a slim banner above the charts for things a person should know but that need no
// answer (the run is not being recorded, the live view skipped steps, a lesson's title). Unlike a
// dialog it never blocks the window or a screenshot; the × hides it. A warning (the dataset fell
// back to spirals: the run trains on other data than the file names) has a warning icon and a
// stronger colour, so it is not mistaken for the usual notes.
#pragma once

#include <QFrame>

class QLabel;

namespace mantissa::ui {

class NoticeBar : public QFrame {
    Q_OBJECT
public:
    enum class Level { info, warning };
    explicit NoticeBar(QWidget* parent = nullptr);
    void showNotice(const QString& message, Level level = Level::info);  // replaces the current text
    QString text() const;
    Level level() const { return m_level; }

private:
    QLabel* m_icon = nullptr;
    QLabel* m_text = nullptr;
    Level m_level = Level::info;
};

}  // namespace mantissa::ui
