// BlockExplorer (see block_explorer.h): one describe_block() call per edit, laid out as a line for
// the scale and a table for the elements.
#include "explorer/block_explorer.h"

#include <cmath>

#include <QComboBox>
#include <QFontDatabase>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QRegularExpression>
#include <QTableWidget>
#include <QVBoxLayout>

#include "error.h"
#include "numeric/describe.h"

namespace mantissa::ui {

namespace {

QString qs(std::string_view s) { return QString::fromUtf8(s.data(), static_cast<qsizetype>(s.size())); }

QString number(double v) {
    if (std::isnan(v)) return QStringLiteral("NaN");
    return QString::number(v, 'g', 9);
}

QString relError(double e) {
    if (std::isnan(e)) return QStringLiteral("–");
    return e == 0 ? QStringLiteral("0") : QString::number(e, 'g', 3);
}

}  // namespace

BlockExplorer::BlockExplorer(QWidget* parent) : QWidget(parent) {
    m_format = new QComboBox(this);
    m_format->setObjectName(QStringLiteral("blockFormat"));
    for (BlockFormat f : all_block_formats) {
        const BlockFormatInfo& i = block_format_info(f);
        m_format->addItem(qs(i.name), static_cast<int>(f));
        m_format->setItemData(m_format->count() - 1,
                              tr("%1 elements (%2 values share one scale), %3 bits a value")
                                  .arg(qs(element_format_name(i.element)))
                                  .arg(i.block_size)
                                  .arg(i.bits_per_value),
                              Qt::ToolTipRole);
    }
    m_format->setCurrentIndex(m_format->findData(static_cast<int>(BlockFormat::mxfp4)));
    m_format->setToolTip(tr("The block-scaled format: OCP MX (a power-of-two scale per 32 values) or NVFP4 "
                            "(an E4M3 scale per 16 values and an FP32 scale per tensor)"));

    m_values = new QLineEdit(this);
    m_values->setObjectName(QStringLiteral("blockValues"));
    m_values->setPlaceholderText(tr("the values of one block, e.g. 0.1 7 1.5 -3 0.3"));
    m_values->setClearButtonEnabled(true);
    m_values->setToolTip(tr("Values separated by spaces or commas: one block (at most 32 values, 16 for nvfp4; "
                            "a shorter block is padded with zeros)"));

    auto* row = new QHBoxLayout;
    row->addWidget(new QLabel(tr("Block of values:"), this));
    row->addWidget(m_values, 1);
    row->addWidget(m_format);

    m_message = new QLabel(this);
    m_message->setObjectName(QStringLiteral("blockMessage"));
    m_message->setStyleSheet(QStringLiteral("color: #b00020"));
    m_message->hide();

    m_scale = new QLabel(this);
    m_scale->setObjectName(QStringLiteral("blockScale"));
    m_scale->setWordWrap(true);
    m_scale->setTextInteractionFlags(Qt::TextSelectableByMouse);

    m_table = new QTableWidget(0, ColumnCount, this);
    m_table->setObjectName(QStringLiteral("blockTable"));
    m_table->setHorizontalHeaderLabels({tr("input"), tr("bits"), tr("s|e|m"), tr("element"), tr("stored"),
                                        tr("rel. error"), tr("")});
    m_table->horizontalHeaderItem(Element)->setToolTip(tr("The element's own value, before the block's scale"));
    m_table->horizontalHeaderItem(Stored)->setToolTip(tr("element × the block's factor: what a tensor holds"));
    m_table->verticalHeader()->hide();
    m_table->setEditTriggers(QAbstractItemView::NoEditTriggers);
    m_table->setSelectionMode(QAbstractItemView::NoSelection);
    m_table->horizontalHeader()->setStretchLastSection(true);
    m_table->setFont(QFontDatabase::systemFont(QFontDatabase::FixedFont));

    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->addLayout(row);
    layout->addWidget(m_message);
    layout->addWidget(m_scale);
    layout->addWidget(m_table, 1);

    connect(m_values, &QLineEdit::textChanged, this, &BlockExplorer::refresh);
    connect(m_format, &QComboBox::currentIndexChanged, this, &BlockExplorer::refresh);
    setValuesText(QStringLiteral("0.1 7 1.5 -3 0.3 0.02 2.5 -0.75"));
}

bool BlockExplorer::setValuesText(const QString& text) {
    if (m_values->text() == text)
        refresh();
    else
        m_values->setText(text);  // textChanged -> refresh
    return m_described.has_value();
}

void BlockExplorer::setBlockFormat(BlockFormat format) {
    m_format->setCurrentIndex(m_format->findData(static_cast<int>(format)));
}

BlockFormat BlockExplorer::blockFormat() const { return static_cast<BlockFormat>(m_format->currentData().toInt()); }

QString BlockExplorer::message() const { return m_message->isHidden() ? QString() : m_message->text(); }

void BlockExplorer::refresh() {
    const BlockFormat format = blockFormat();
    const BlockFormatInfo& info = block_format_info(format);
    std::vector<float> values;
    QStringList texts;
    QString problem;
    for (const QString& t : m_values->text().split(QRegularExpression(QStringLiteral("[\\s,;]+")), Qt::SkipEmptyParts)) {
        const auto v = parse_fp32(t.toStdString());
        if (!v) {
            problem = tr("'%1' is not a number (use decimal, hex float like 0x1.8p3, inf, -inf or nan).").arg(t);
            break;
        }
        values.push_back(*v);
        texts << t;
    }
    if (problem.isEmpty() && values.empty()) problem = tr("Type the values of a block.");
    if (problem.isEmpty() && values.size() > static_cast<std::size_t>(info.block_size))
        problem = tr("%1 values: one block of %2 holds at most %3.").arg(values.size()).arg(qs(info.name)).arg(info.block_size);
    m_described.reset();
    if (problem.isEmpty()) {
        try {
            m_described = describe_block(format, values.data(), values.size());
        } catch (const Error& e) {
            problem = QString::fromStdString(e.what());
        }
    }
    m_message->setText(problem);
    m_message->setVisible(!problem.isEmpty());
    if (!m_described) {
        m_scale->clear();
        m_table->setRowCount(0);
        return;
    }
    const BlockDescription& d = *m_described;
    if (info.scale == ScaleKind::e8m0)
        m_scale->setText(tr("amax %1 → shared scale E8M0 %2 (%3) = 2^%4: every element is multiplied by %5.%6")
                             .arg(number(d.amax), qs(d.scale_hex), qs(d.scale_bits))
                             .arg(d.scale_exponent)
                             .arg(number(d.decode_factor))
                             .arg(d.nan_block ? tr(" The block holds a NaN or inf: its scale is NaN, and so is every value.")
                                              : QString()));
    else
        m_scale->setText(tr("amax %1 → block scale E4M3 %2 (%3) = %4, tensor scale %5 (this block as the whole "
                            "tensor): every element is multiplied by %6.%7")
                             .arg(number(d.amax), qs(d.scale_hex), qs(d.scale_bits), number(d.scale_value),
                                  number(d.tensor_scale), number(d.decode_factor))
                             .arg(d.nan_block ? tr(" The block holds a NaN or inf: its scale is NaN, and so is every value.")
                                              : QString()));
    m_table->setRowCount(static_cast<int>(d.elements.size()));
    for (int r = 0; r < static_cast<int>(d.elements.size()); ++r) {
        const DescribedElement& e = d.elements[static_cast<std::size_t>(r)];
        QString note;
        QColor tint;
        if (e.saturated) {
            note = tr("saturated at the element's largest value");
            tint = QColor(255, 200, 150);
        } else if (e.flushed_to_zero) {
            note = tr("flushed to zero: below half the smallest element × scale");
            tint = QColor(190, 215, 255);
        }
        const QString cells[ColumnCount] = {texts.at(r),
                                            qs(e.hex),
                                            qs(e.sign_bits + "|" + e.exponent_bits + "|" + e.mantissa_bits),
                                            number(e.element_value),
                                            number(e.value),
                                            relError(e.rel_error),
                                            note};
        for (int c = 0; c < ColumnCount; ++c) {
            auto* item = new QTableWidgetItem(cells[c]);
            if (tint.isValid()) item->setBackground(tint);
            m_table->setItem(r, c, item);
        }
    }
    m_table->resizeColumnsToContents();
}

}  // namespace mantissa::ui
