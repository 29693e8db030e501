// The format explorer shows exactly what describe_stored() (the code behind `mantissa-cli format`)
// says: for each value and format, the bits, hex, exact stored value, errors and class on screen
// equal the engine's; bad text shows the message; the slider, the sign toggle and the overflow
// option drive the same rows; each number line places the value where it belongs.
#include <QtTest>

#include <QLabel>
#include <QLineEdit>
#include <QPixmap>
#include <QSlider>
#include <QTextDocument>
#include <QToolButton>
#include <QVBoxLayout>

#include <QComboBox>
#include <QTableWidget>

#include "exact_compare.h"
#include "explorer/bit_strip.h"
#include "explorer/block_explorer.h"
#include "explorer/format_explorer.h"
#include "explorer/format_number_line.h"

using namespace mantissa;
using namespace mantissa::ui;

Q_DECLARE_METATYPE(mantissa::Format)

namespace {
QString name(Format f) {
    return QString::fromUtf8(format_name(f).data(), qsizetype(format_name(f).size()));
}
QString qs(const std::string& s) {
    return QString::fromStdString(s);
}

QString plainBits(const QLabel* label) {
    QTextDocument doc;
    doc.setHtml(label->text());
    QString s = doc.toPlainText();
    s.replace(QChar(0xa0), QLatin1Char('|')).replace(QLatin1Char(' '), QLatin1Char('|'));
    return s;
}

template <typename W>
W* child(const FormatExplorer& e, const char* what, Format f) {
    W* w = e.findChild<W*>(QStringLiteral("%1-%2").arg(QLatin1String(what), name(f)));
    if (!w) qFatal("no child %s-%s", what, qPrintable(name(f)));
    return w;
}
}  // namespace

class TestFormatExplorer : public QObject {
    Q_OBJECT
private slots:
    void rowsShowTheEnginesDescription_data() {
        QTest::addColumn<QString>("text");
        QTest::addColumn<int>("overflow");
        for (const char* v : {"0.1", "65520", "1e-8", "300", "-2.5e-6", "448", "1e-40", "inf", "-0", "0x1.8p3"})
            QTest::newRow(v) << QString::fromLatin1(v) << int(Overflow::to_inf);
        for (const char* v : {"65520", "300", "1e6"})
            QTest::newRow(qPrintable(QStringLiteral("%1 saturating").arg(QLatin1String(v))))
                << QString::fromLatin1(v) << int(Overflow::saturate);
    }
    void rowsShowTheEnginesDescription() {
        QFETCH(QString, text);
        QFETCH(int, overflow);
        FormatExplorer e;
        e.setOverflow(static_cast<Overflow>(overflow));
        QVERIFY(e.setValueText(text));
        QCOMPARE(e.message(), QString());
        const float x = *parse_fp32(text.toStdString());
        for (Format f : all_formats) {
            const StoredValue s = describe_stored(f, x, static_cast<Overflow>(overflow));
            QCOMPARE(plainBits(child<QLabel>(e, "bits", f)),
                     qs(s.sign_bits + "|" + s.exponent_bits + "|" + s.mantissa_bits));
            QCOMPARE(child<QLabel>(e, "hex", f)->text(), qs(s.hex));
            QCOMPARE(child<QLineEdit>(e, "stored", f)->text(), qs(s.exact));
            const QString cls = child<QLabel>(e, "class", f)->text();
            QVERIFY2(cls.startsWith(QLatin1String(float_class_name(s.cls))), qPrintable(cls));
            QCOMPARE(cls.contains(QLatin1String("overflow")) || cls.contains(QLatin1String("saturated")), s.overflowed);
            QCOMPARE(cls.contains(QLatin1String("underflow")), s.flushed_to_zero);
            const QString err = child<QLabel>(e, "error", f)->text();
            QVERIFY2(err.contains(errorFigure(s.abs_error)) && err.contains(errorFigure(s.rel_error)), qPrintable(err));
        }
    }

    void knownCases() {
        // A few figures checked by hand, so the test does not only compare the engine with itself.
        FormatExplorer e;
        e.setValueText(QStringLiteral("0.1"));
        QCOMPARE(child<QLineEdit>(e, "stored", Format::fp16)->text(), QStringLiteral("0.0999755859375"));
        QCOMPARE(plainBits(child<QLabel>(e, "bits", Format::fp16)), QStringLiteral("0|01011|1001100110"));
        e.setValueText(QStringLiteral("65520"));
        QCOMPARE(child<QLabel>(e, "class", Format::fp16)->text(), QStringLiteral("inf (overflow)"));
        e.setValueText(QStringLiteral("1e-8"));
        QCOMPARE(child<QLabel>(e, "class", Format::fp16)->text(), QStringLiteral("zero (underflow)"));
        QCOMPARE(child<QLabel>(e, "class", Format::bf16)->text(), QStringLiteral("normal"));
        e.setValueText(QStringLiteral("300"));
        QCOMPARE(child<QLineEdit>(e, "stored", Format::fp8_e4m3)->text(), QStringLiteral("288"));
        e.setValueText(QStringLiteral("1000"));
        QCOMPARE(child<QLabel>(e, "class", Format::fp8_e4m3)->text(), QStringLiteral("nan (overflow)"));
        e.setOverflow(Overflow::saturate);
        QCOMPARE(child<QLineEdit>(e, "stored", Format::fp8_e4m3)->text(), QStringLiteral("448"));
        QCOMPARE(child<QLabel>(e, "class", Format::fp8_e4m3)->text(), QStringLiteral("normal (saturated)"));
    }

    void badTextShowsTheMessage_data() {
        QTest::addColumn<QString>("text");
        QTest::newRow("word") << QStringLiteral("abc");
        QTest::newRow("trailing junk") << QStringLiteral("1.5x");
        QTest::newRow("two dots") << QStringLiteral("1..2");
    }
    void badTextShowsTheMessage() {
        QFETCH(QString, text);
        FormatExplorer e;
        e.setValueText(QStringLiteral("0.5"));
        QVERIFY(!e.setValueText(text));
        QVERIFY(!e.value());
        QVERIFY2(e.message().contains(QStringLiteral("'%1' is not a number").arg(text)), qPrintable(e.message()));
        QVERIFY(!child<QLabel>(e, "class", Format::fp16)->isEnabled());  // greyed, last value kept
        QCOMPARE(child<QLineEdit>(e, "stored", Format::fp16)->text(), QStringLiteral("0.5"));
        QVERIFY(e.setValueText(QStringLiteral("nan")));
        QCOMPARE(e.message(), QString());
        QVERIFY(child<QLabel>(e, "class", Format::fp16)->isEnabled());
        QCOMPARE(child<QLabel>(e, "class", Format::fp16)->text(), QStringLiteral("nan"));
    }

    void sliderAndSignDriveTheValue() {
        FormatExplorer e;
        auto* slider = e.findChild<QSlider*>(QStringLiteral("magnitudeSlider"));
        QVERIFY(slider);
        QVERIFY(slider->minimum() <= -30 * FormatExplorer::slider_steps_per_octave);
        QVERIFY(slider->maximum() >= 20 * FormatExplorer::slider_steps_per_octave);
        e.setValueText(QStringLiteral("1e-5"));
        QCOMPARE(slider->value(), int(std::lround(std::log2(1e-5) * FormatExplorer::slider_steps_per_octave)));
        slider->setValue(0);  // 2^0
        QCOMPARE(e.valueText(), QStringLiteral("1"));
        QCOMPARE(*e.value(), 1.0f);
        QCOMPARE(child<QLineEdit>(e, "stored", Format::fp8_e5m2)->text(), QStringLiteral("1"));
        slider->setValue(-24 * FormatExplorer::slider_steps_per_octave);  // fp16's smallest subnormal
        QCOMPARE_EXACT(*e.value(), std::ldexp(1.0f, -24));
        QCOMPARE(child<QLabel>(e, "class", Format::fp16)->text(), QStringLiteral("subnormal"));
        e.findChild<QToolButton*>(QStringLiteral("signToggle"))->click();
        QCOMPARE_EXACT(*e.value(), -std::ldexp(1.0f, -24));
        QCOMPARE(plainBits(child<QLabel>(e, "bits", Format::fp16)), QStringLiteral("1|00000|0000000001"));
        slider->setValue(FormatExplorer::slider_steps_per_octave);  // the sign stays negative
        QCOMPARE(*e.value(), -2.0f);
    }

    void numberLinesPlaceTheValue_data() {
        QTest::addColumn<QString>("text");
        QTest::addColumn<Format>("format");
        QTest::addColumn<int>("placement");
        using P = FormatNumberLine::Placement;
        QTest::newRow("300 in e4m3") << QStringLiteral("300") << Format::fp8_e4m3 << int(P::inside);
        QTest::newRow("0.1 in fp16") << QStringLiteral("0.1") << Format::fp16 << int(P::inside);
        QTest::newRow("1e-12 in fp16") << QStringLiteral("1e-12") << Format::fp16 << int(P::belowRange);
        QTest::newRow("1e6 in fp16") << QStringLiteral("1e6") << Format::fp16 << int(P::aboveRange);
        QTest::newRow("1e6 in fp32") << QStringLiteral("1e6") << Format::fp32 << int(P::inside);
        QTest::newRow("0 in bf16") << QStringLiteral("0") << Format::bf16 << int(P::zero);
        QTest::newRow("-inf in e5m2") << QStringLiteral("-inf") << Format::fp8_e5m2 << int(P::infinite);
        QTest::newRow("nan in tf32") << QStringLiteral("nan") << Format::tf32 << int(P::notANumber);
    }
    void numberLinesPlaceTheValue() {
        QFETCH(QString, text);
        QFETCH(Format, format);
        QFETCH(int, placement);
        FormatExplorer e;
        e.resize(e.sizeHint());
        e.show();
        QVERIFY(e.setValueText(text));
        const FormatNumberLine* line = e.numberLine(format);
        QCOMPARE(int(line->placement()), placement);
        const FormatInfo& info = format_info(format);
        QVERIFY(line->spanLow() < std::log2(double(info.min_subnormal)));
        QVERIFY(line->spanHigh() > std::log2(double(info.max_finite)));
        if (placement == int(FormatNumberLine::Placement::inside))
            QCOMPARE(line->valueLog2(), std::log2(std::fabs(double(*e.value()))));
        QVERIFY(!child<FormatNumberLine>(e, "line", format)->grab().isNull());  // paints without trouble
    }

    void boundLabels() {
        QCOMPARE(boundLabel(std::ldexp(1.0f, -24)), QStringLiteral("2^-24"));
        QCOMPARE(boundLabel(65504.0f), QStringLiteral("65504"));
        QCOMPARE(boundLabel(448.0f), QStringLiteral("448"));
    }

    // The block part shows what describe_block() says (the code behind `mantissa-cli format --block`):
    // the scale line and every cell, for MX and NVFP4; bad text and too many values are refused.
    void blockOfValues() {
        FormatExplorer e;
        BlockExplorer* b = e.blockExplorer();
        QVERIFY(b);
        auto* table = b->findChild<QTableWidget*>(QStringLiteral("blockTable"));
        auto* scale = b->findChild<QLabel*>(QStringLiteral("blockScale"));
        QVERIFY(table && scale);
        b->setBlockFormat(BlockFormat::mxfp4);
        QVERIFY(b->setValuesText(QStringLiteral("0.1, 7 1.5 -3")));
        const float values[] = {0.1f, 7.0f, 1.5f, -3.0f};
        const BlockDescription d = describe_block(BlockFormat::mxfp4, values, 4);
        QCOMPARE(table->rowCount(), 4);
        QVERIFY(scale->text().contains(qs(d.scale_hex)));  // 0x7f: 2^0
        QCOMPARE(d.scale_hex, std::string("0x7f"));
        for (int r = 0; r < 4; ++r) {
            const DescribedElement& el = d.elements[static_cast<std::size_t>(r)];
            QCOMPARE(table->item(r, BlockExplorer::Bits)->text(), qs(el.hex));
            QCOMPARE(table->item(r, BlockExplorer::Stored)->text().toFloat(), el.value);  // 9 digits: the float exactly
        }
        QCOMPARE(table->item(1, BlockExplorer::Stored)->text(), QStringLiteral("6"));
        QVERIFY(table->item(1, BlockExplorer::Note)->text().contains(QStringLiteral("saturated")));
        QVERIFY(table->item(0, BlockExplorer::Note)->text().contains(QStringLiteral("flushed to zero")));
        // NVFP4: the E4M3 block scale and the tensor scale, the block seen as the whole tensor.
        b->setBlockFormat(BlockFormat::nvfp4);
        const BlockDescription n = describe_block(BlockFormat::nvfp4, values, 4);
        QVERIFY(scale->text().contains(QStringLiteral("E4M3 ") + qs(n.scale_hex)));
        QCOMPARE(table->item(3, BlockExplorer::Stored)->text().toFloat(), n.elements[3].value);
        // Refusals: one sentence each, and the table empties.
        QVERIFY(!b->setValuesText(QStringLiteral("1 2 x")));
        QVERIFY(b->message().contains(QStringLiteral("'x' is not a number")));
        QCOMPARE(table->rowCount(), 0);
        QVERIFY(!b->setValuesText(QString(QStringLiteral("1 ")).repeated(17)));
        QVERIFY(b->message().contains(QStringLiteral("at most 16")));
        b->setBlockFormat(BlockFormat::mxfp8_e4m3);  // 32 to a block: the same 17 values fit
        QVERIFY(b->described().has_value());
        QVERIFY(b->message().isEmpty());
    }

    // A window of its own closes with Esc and Ctrl+W, as the history's windows do, even while the
    // value entry has the focus; embedded in another window it leaves those keys to its host.
    void closeKeysCloseTheWindow() {
        FormatExplorer e;
        QCOMPARE(e.windowTitle().count(QStringLiteral("Mantissa")), 1);
        const auto activate = [&e] {
            e.show();
            e.activateWindow();
            return QTest::qWaitForWindowActive(&e);
        };
        QVERIFY(activate());
        auto* entry = e.findChild<QLineEdit*>(QStringLiteral("valueEntry"));
        QVERIFY(entry);
        entry->setFocus();
        QTest::keyClick(entry, Qt::Key_Escape);
        QTRY_VERIFY(!e.isVisible());
        QVERIFY(activate());
        QTest::keySequence(&e, QKeySequence(Qt::CTRL | Qt::Key_W));
        QTRY_VERIFY(!e.isVisible());

        QWidget host;
        auto* layout = new QVBoxLayout(&host);
        auto* embedded = new FormatExplorer;
        layout->addWidget(embedded);
        host.show();
        host.activateWindow();
        QVERIFY(QTest::qWaitForWindowActive(&host));
        QTest::keyClick(embedded, Qt::Key_Escape);
        QTest::keySequence(embedded, QKeySequence(Qt::CTRL | Qt::Key_W));
        QCoreApplication::processEvents();
        QVERIFY(host.isVisible());
        QVERIFY(embedded->isVisible());
    }

    // The window of docs/screenshots/explorer.png renders whole in every run; the file is
    // written only with MANTISSA_SCREENSHOT_DIR set.
    void screenshot() {
        const QByteArray dir = qgetenv("MANTISSA_SCREENSHOT_DIR");
        FormatExplorer e;
        e.resize(1240, 800);
        e.show();
        e.setValueText(QStringLiteral("1e-5"));
        QCoreApplication::processEvents();
        const QPixmap shot = e.grab();
        QVERIFY(!shot.isNull());
        QCOMPARE(shot.deviceIndependentSize().toSize(), e.size());
        if (!dir.isEmpty())
            QVERIFY(shot.save(QDir(QString::fromLocal8Bit(dir)).filePath(QStringLiteral("explorer.png"))));
    }
};

QTEST_MAIN(TestFormatExplorer)
#include "test_format_explorer.moc"
