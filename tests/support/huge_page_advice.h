// Whether the kernel was asked for transparent huge pages (madvise MADV_HUGEPAGE) over the memory
// at `p`: the "hg" flag of its mapping in /proc/self/smaps (engine/huge_pages.h). Linux only; the
// caller skips where /sys/kernel/mm/transparent_hugepage is missing.
#pragma once

#include <QByteArray>
#include <QFile>
#include <QString>
#include <QStringList>

#include <cstdint>

namespace mantissa::test {

// "hg" among the VmFlags of the mapping holding `p`; false when no mapping holds it.
inline bool huge_page_advice_at(const void* p, QString* flags_seen = nullptr) {
    const auto at = reinterpret_cast<std::uintptr_t>(p);
    QFile smaps(QStringLiteral("/proc/self/smaps"));
    if (!smaps.open(QIODevice::ReadOnly | QIODevice::Text)) return false;
    bool in_mapping = false;
    for (const QByteArray& line : smaps.readAll().split('\n')) {
        const int dash = line.indexOf('-'), space = line.indexOf(' ');
        if (dash > 0 && space > dash && line[space - 1] != ':') {  // "start-end perms ..." opens a mapping
            bool ok1 = false, ok2 = false;
            const std::uintptr_t start = line.left(dash).toULongLong(&ok1, 16);
            const std::uintptr_t end = line.mid(dash + 1, space - dash - 1).toULongLong(&ok2, 16);
            in_mapping = ok1 && ok2 && start <= at && at < end;
        } else if (in_mapping && line.startsWith("VmFlags:")) {
            const QString flags = QString::fromLatin1(line.mid(8)).trimmed();
            if (flags_seen) *flags_seen = flags;
            return flags.split(QLatin1Char(' ')).contains(QStringLiteral("hg"));
        }
    }
    return false;
}

// The first 2 MB boundary at or after `p`: the memory huge pages can back.
inline const void* first_huge_page_in(const void* p) {
    constexpr std::uintptr_t huge = std::uintptr_t{2} << 20;
    return reinterpret_cast<const void*>((reinterpret_cast<std::uintptr_t>(p) + huge - 1) & ~(huge - 1));
}

}  // namespace mantissa::test
