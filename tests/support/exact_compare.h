// QCOMPARE_EXACT(actual, expected): QCOMPARE with ==, for floating-point values near zero. Qt's
// QCOMPARE takes a float expected value under 1e-5 (a double one under 1e-12) as equal to any
// actual value that small, so it cannot tell 0 from a value a rounding failed to flush, nor a
// subnormal result from zero. This one prints both values to 17 digits when they differ.
#pragma once

#include <QtTest>

#define QCOMPARE_EXACT(actual, expected)                                                              \
    do {                                                                                              \
        const auto exact_actual_ = (actual);                                                          \
        const auto exact_expected_ = (expected);                                                      \
        QVERIFY2(exact_actual_ == exact_expected_,                                                    \
                 qPrintable(QStringLiteral("%1 is %2, not %3")                                        \
                                .arg(QStringLiteral(#actual))                                         \
                                .arg(static_cast<double>(exact_actual_), 0, 'g', 17)                  \
                                .arg(static_cast<double>(exact_expected_), 0, 'g', 17)));             \
    } while (false)
