// findDefaultExperiment, findDocumentation: the places listed in resource_paths.h, in that order.
// MANTISSA_SOURCE_TREE is the source folder this library was built from (ui/CMakeLists.txt).
#include "resource_paths.h"

#include <QCoreApplication>
#include <QDir>
#include <QFileInfo>
#include <QStandardPaths>
#include <QStringList>

namespace mantissa::ui {

namespace {
QString firstExisting(const QStringList& candidates, bool folder) {
    for (const QString& c : candidates) {
        if (c.isEmpty()) continue;
        const QFileInfo info(c);
        if (folder ? info.isDir() : info.isFile()) return QDir::cleanPath(info.absoluteFilePath());
    }
    return {};
}

QString besideExecutable(const QString& relative) {
    const QString dir = QCoreApplication::applicationDirPath();
    return dir.isEmpty() ? QString() : dir + QStringLiteral("/../") + relative;
}

QString inSourceTree(const QString& relative) {
#ifdef MANTISSA_SOURCE_TREE
    return QStringLiteral(MANTISSA_SOURCE_TREE "/") + relative;
#else
    Q_UNUSED(relative);
    return {};
#endif
}
}  // namespace

QString findDefaultExperiment() {
    return firstExisting({besideExecutable(QStringLiteral("share/mantissa/experiments/default.json")),
                          inSourceTree(QStringLiteral("resources/experiments/default.json")),
                          QStandardPaths::locate(QStandardPaths::GenericDataLocation,
                                                 QStringLiteral("mantissa/experiments/default.json"))},
                         false);
}

QString findDocumentation() {
    // A docs folder is recognised by its guide to the window, so an unrelated "docs" is never opened.
    const auto docs = [](const QString& folder) {
        return folder.isEmpty() || !QFileInfo(folder + QStringLiteral("/gui.md")).isFile() ? QString() : folder;
    };
    return firstExisting({docs(besideExecutable(QStringLiteral("share/doc/mantissa"))),
                          docs(besideExecutable(QStringLiteral("share/mantissa/docs"))),
                          docs(inSourceTree(QStringLiteral("docs"))),
                          docs(QStandardPaths::locate(QStandardPaths::GenericDataLocation, QStringLiteral("doc/mantissa"),
                                                      QStandardPaths::LocateDirectory))},
                         true);
}

}  // namespace mantissa::ui
