// BlockExplorer: how a block of values shares one scale in a block-scaled format (MXFP8, MXFP6,
// MXFP4, NVFP4). The values are typed as a list (spaces or commas; anything parse_fp32 reads); a
// line says the block's scale (E8M0's power of two for MX; for NVFP4 the E4M3 block scale and the
// FP32 tensor scale, the block seen as the whole tensor) and a table shows, per value, its element
// code and fields, the element's value, the stored value (element × the block's factor), the
// relative error, and whether it saturated or was flushed to zero.
//
// Every figure comes from describe_block() (numeric/describe_block.h), the code behind
// `mantissa-cli format --block`; this widget only lays it out. It sits under the single-value rows
// of the format explorer. Object names: "blockFormat", "blockValues", "blockMessage",
// "blockScale", "blockTable". GUI thread only.
#pragma once

#include <optional>

#include <QWidget>

#include "numeric/describe_block.h"

class QComboBox;
class QLabel;
class QLineEdit;
class QTableWidget;

namespace mantissa::ui {

class BlockExplorer : public QWidget {
    Q_OBJECT
public:
    enum Column { Input, Bits, Fields, Element, Stored, RelError, Note, ColumnCount };

    explicit BlockExplorer(QWidget* parent = nullptr);

    // Shows `text` as if typed; returns whether it described a block.
    bool setValuesText(const QString& text);
    void setBlockFormat(BlockFormat format);
    BlockFormat blockFormat() const;
    // What the table shows; empty while the text is not a block of numbers.
    const std::optional<BlockDescription>& described() const { return m_described; }
    QString message() const;

private:
    void refresh();

    QComboBox* m_format = nullptr;
    QLineEdit* m_values = nullptr;
    QLabel* m_message = nullptr;
    QLabel* m_scale = nullptr;
    QTableWidget* m_table = nullptr;
    std::optional<BlockDescription> m_described;
};

}  // namespace mantissa::ui
