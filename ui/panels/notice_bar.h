// NoticeBar: a slim banner above the charts for things a person should know but that need no
// answer (the dataset fell back to spirals, the run is not being recorded, the live view skipped
// steps). Unlike a dialog it never blocks the window or a screenshot; the × hides it.
#pragma once

#include <QFrame>

class QLabel;

namespace mantissa::ui {

class NoticeBar : public QFrame {
    Q_OBJECT
public:
    explicit NoticeBar(QWidget* parent = nullptr);
    void showNotice(const QString& message);  // replaces the current text
    QString text() const;

private:
    QLabel* m_text = nullptr;
};

}  // namespace mantissa::ui
