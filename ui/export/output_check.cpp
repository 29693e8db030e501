// The GUI's output check (see output_check.h): store/output_guard.h's sentences, file name first.
#include "export/output_check.h"

#include <QFile>

#include "live/store_location.h"
#include "store/output_guard.h"

namespace mantissa::ui {

QString outputRefusal(const QString& path) {
    const std::vector<store::GuardedFile> guarded = {
        {QFile::encodeName(defaultStorePath()).toStdString(), "the run store"}};
    const auto why = store::refuse_output({}, QFile::encodeName(path).toStdString(), guarded);
    return why ? QFile::decodeName(QByteArray::fromStdString(*why)) : QString();
}

QString outputDestination(const QString& path) {
    const auto destination = store::output_destination(QFile::encodeName(path).toStdString());
    return destination ? QFile::decodeName(QByteArray::fromStdString(*destination)) : path;
}

}  // namespace mantissa::ui
