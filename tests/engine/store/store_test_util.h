// Shared by the store suites: synthetic telemetry with every field set (so a column that is not
// written or read back shows up as a difference), NaN-aware comparisons, and raw SQLite access
// that does not go through the store's own code.
#pragma once

#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

#include <QCryptographicHash>
#include <QFile>
#include <QString>
#include <QStringList>

#include <sqlite3.h>

#include "error.h"
#include "config/layer_info.h"
#include "config/telemetry.h"

namespace store_test {

using namespace mantissa;

// The sentence a mantissa::Error thrown by f carries; empty when f does not throw.
template <typename F>
QString error_of(F&& f) {
    try {
        f();
    } catch (const Error& e) {
        return QString::fromUtf8(e.what());
    }
    return {};
}

inline StepRecord make_step(std::int64_t i) {
    StepRecord s;
    s.step = i;
    s.epoch = static_cast<std::int32_t>(i / 100);
    s.time_s = 0.0125 * static_cast<double>(i + 1);
    s.loss = 2.5 / static_cast<double>(i + 1);  // most need 16 or 17 digits
    s.loss_scale = std::ldexp(1.0, 16 - static_cast<int>(i % 5));
    s.overflow = i % 7 == 3;
    s.skipped = i % 7 == 3;
    s.grad_norm = s.overflow ? INFINITY : 0.1 * static_cast<double>(i % 13) + 0.01;
    s.learning_rate = 1e-3 * (1.0 - static_cast<double>(i) * 1e-6);
    s.samples_per_s = 12345.678 + static_cast<double>(i);
    s.step_time_ms = 10.5 + static_cast<double>(i % 3);
    s.memory.parameters = 1000 + i;
    s.memory.master_weights = 2000 + i;
    s.memory.gradients = 3000 + i;
    s.memory.optimizer_state = 4000 + i;
    s.memory.activations = 5000 + i;
    s.memory.workspace = 6000 + i;
    s.memory.device_in_use = (std::int64_t{1} << 33) + i;
    s.memory.device_total = std::int64_t{1} << 36;
    s.memory.modelled = i % 2 == 0;
    return s;
}

inline std::vector<LayerStepRecord> make_layers(std::int64_t step, int count) {
    std::vector<LayerStepRecord> v;
    for (int l = 0; l < count; ++l) {
        LayerStepRecord r;
        r.step = step;
        r.layer = l;
        r.name = "fc" + std::to_string(l + 1);
        // Every compute format in turn: the tensor formats, then the block-scaled ones.
        const std::size_t f = static_cast<std::size_t>(step + l) % (all_formats.size() + all_block_formats.size());
        r.precision = f < all_formats.size() ? ComputeFormat(all_formats[f])
                                             : ComputeFormat(all_block_formats[f - all_formats.size()]);
        r.grad_amax = 0.5 / static_cast<double>(step + l + 1);
        r.grad_elements = 784 * 256 + l;
        r.frac_zero = 0.01 * l;
        r.frac_subnormal = 0.001 * static_cast<double>(step % 10);
        r.frac_nonfinite = step % 7 == 3 ? 1.0 / 3.0 : 0.0;
        r.frac_underflow = 0.25 / static_cast<double>(l + 2);
        r.frac_lost_updates = 0.125 * l;
        // A realistic spread of binades, plus the two end bins now and then.
        const int centre = -20 - l - static_cast<int>(step % 9);
        for (int d = -12; d <= 12; ++d)
            r.grad_exponents.counts[static_cast<std::size_t>(centre + d - ExponentHistogram::min_exponent)] =
                static_cast<std::uint32_t>(1000 / (1 + d * d) + step);
        if (step % 11 == 0) r.grad_exponents.counts.front() = 7;
        if (step % 13 == 0) r.grad_exponents.counts.back() = 4000000000u;
        // FP8 rows carry their scaling (v3); a NaN amax now and then (stored as NULL, read back as
        // NaN within an FP8 row), and an inf one.
        if (r.precision == Format::fp8_e4m3) {
            Fp8LayerScaling f;
            f.input = {std::ldexp(1.0, 3 + l), 56.0 / static_cast<double>(step + 1)};
            f.weight = {448.0 / 0.0371, 0.0371 + 1e-4 * static_cast<double>(step)};
            f.grad_output = {std::ldexp(1.0, 20) / 3.0, 1.0 / 3.0e4};
            if (step % 7 == 3) f.grad_output.amax = NAN;
            if (step % 11 == 5) f.input.amax = INFINITY;
            r.fp8 = f;
        }
        v.push_back(std::move(r));
    }
    return v;
}

inline bool same(double a, double b) {
    return (std::isnan(a) && std::isnan(b)) || a == b;
}

struct Field {
    const char* name;
    double a, b;
};

inline QString first_difference(std::int64_t step, std::initializer_list<Field> fields) {
    for (const Field& f : fields)
        if (!same(f.a, f.b))
            return QString("step %1: %2 %3 != %4").arg(step).arg(f.name).arg(f.a, 0, 'g', 17).arg(f.b, 0, 'g', 17);
    return {};
}

template <typename T>
double d(T v) {
    return static_cast<double>(v);
}

// Empty when equal, else the first field that differs.
inline QString diff(const StepRecord& a, const StepRecord& b) {
    const MemoryBreakdown &m = a.memory, &n = b.memory;
    return first_difference(a.step, {{"step", d(a.step), d(b.step)},
                                     {"epoch", d(a.epoch), d(b.epoch)},
                                     {"time_s", a.time_s, b.time_s},
                                     {"loss", a.loss, b.loss},
                                     {"loss_scale", a.loss_scale, b.loss_scale},
                                     {"overflow", d(a.overflow), d(b.overflow)},
                                     {"skipped", d(a.skipped), d(b.skipped)},
                                     {"grad_norm", a.grad_norm, b.grad_norm},
                                     {"learning_rate", a.learning_rate, b.learning_rate},
                                     {"samples_per_s", a.samples_per_s, b.samples_per_s},
                                     {"step_time_ms", a.step_time_ms, b.step_time_ms},
                                     {"memory.parameters", d(m.parameters), d(n.parameters)},
                                     {"memory.master_weights", d(m.master_weights), d(n.master_weights)},
                                     {"memory.gradients", d(m.gradients), d(n.gradients)},
                                     {"memory.optimizer_state", d(m.optimizer_state), d(n.optimizer_state)},
                                     {"memory.activations", d(m.activations), d(n.activations)},
                                     {"memory.workspace", d(m.workspace), d(n.workspace)},
                                     {"memory.device_in_use", d(m.device_in_use), d(n.device_in_use)},
                                     {"memory.device_total", d(m.device_total), d(n.device_total)},
                                     {"memory.modelled", d(m.modelled), d(n.modelled)}});
}

inline QString diff(const LayerStepRecord& a, const LayerStepRecord& b) {
    QString f = first_difference(a.step, {{"step", d(a.step), d(b.step)},
                                          {"layer", d(a.layer), d(b.layer)},
                                          {"grad_amax", a.grad_amax, b.grad_amax},
                                          {"grad_elements", d(a.grad_elements), d(b.grad_elements)},
                                          {"frac_zero", a.frac_zero, b.frac_zero},
                                          {"frac_subnormal", a.frac_subnormal, b.frac_subnormal},
                                          {"frac_nonfinite", a.frac_nonfinite, b.frac_nonfinite},
                                          {"frac_underflow", a.frac_underflow, b.frac_underflow},
                                          {"frac_lost_updates", a.frac_lost_updates, b.frac_lost_updates}});
    if (!f.isEmpty()) return f;
    if (a.name != b.name) return QString("layer name %1 != %2").arg(a.name.c_str(), b.name.c_str());
    if (a.precision != b.precision) return QString("step %1 layer %2: precision differs").arg(a.step).arg(a.layer);
    if (a.grad_exponents.counts != b.grad_exponents.counts)
        return QString("step %1 layer %2: histogram differs").arg(a.step).arg(a.layer);
    if (a.fp8.has_value() != b.fp8.has_value())
        return QString("step %1 layer %2: fp8 scaling %3 != %4")
            .arg(a.step)
            .arg(a.layer)
            .arg(a.fp8 ? "present" : "absent", b.fp8 ? "present" : "absent");
    if (a.fp8) {
        const Fp8LayerScaling &f = *a.fp8, &g = *b.fp8;
        return first_difference(a.step, {{"fp8.input.scale", f.input.scale, g.input.scale},
                                         {"fp8.weight.scale", f.weight.scale, g.weight.scale},
                                         {"fp8.grad_output.scale", f.grad_output.scale, g.grad_output.scale},
                                         {"fp8.input.amax", f.input.amax, g.input.amax},
                                         {"fp8.weight.amax", f.weight.amax, g.weight.amax},
                                         {"fp8.grad_output.amax", f.grad_output.amax, g.grad_output.amax}});
    }
    return {};
}

// A run's layers as a convolutional network describes them (schema version 4's `layers` table):
// image shapes and flat ones, a layer that precision.layers may not name (batchnorm), a name with
// the dots of a nested module, and one with a comma and a quote (CSV quoting).
inline std::vector<LayerInfo> make_layer_infos() {
    auto layer = [](std::string name, std::string kind, SampleShape in, SampleShape out, std::int64_t parameters,
                    bool takes_precision) {
        LayerInfo l;
        l.name = std::move(name);
        l.kind = std::move(kind);
        l.in_shape = in;
        l.out_shape = out;
        l.in_features = in.numel();
        l.out_features = out.numel();
        l.parameters = parameters;
        l.takes_precision = takes_precision;
        return l;
    };
    return {
        layer("conv1", "conv2d", {1, 28, 28}, {32, 28, 28}, 32 * 9 + 32, true),
        layer("bn1", "batchnorm2d", {32, 28, 28}, {32, 28, 28}, 64, false),
        layer("layer1.0.conv1", "conv2d", {32, 28, 28}, {64, 14, 14}, 64 * 32 * 9 + 64, true),
        layer("head, \"final\"", "linear", {12544, 1, 1}, {10, 1, 1}, 12544 * 10 + 10, true),
    };
}

// Empty when equal, else the first field that differs.
inline QString diff(const LayerInfo& a, const LayerInfo& b) {
    auto shape = [](const SampleShape& s) { return QString::fromStdString(s.text()); };
    if (a.name != b.name) return QString("name %1 != %2").arg(a.name.c_str(), b.name.c_str());
    if (a.kind != b.kind) return QString("%1: kind %2 != %3").arg(a.name.c_str(), a.kind.c_str(), b.kind.c_str());
    if (a.in_shape != b.in_shape)
        return QString("%1: in_shape %2 != %3").arg(a.name.c_str(), shape(a.in_shape), shape(b.in_shape));
    if (a.out_shape != b.out_shape)
        return QString("%1: out_shape %2 != %3").arg(a.name.c_str(), shape(a.out_shape), shape(b.out_shape));
    if (a.in_features != b.in_features || a.out_features != b.out_features)
        return QString("%1: features %2 -> %3 != %4 -> %5")
            .arg(a.name.c_str())
            .arg(a.in_features)
            .arg(a.out_features)
            .arg(b.in_features)
            .arg(b.out_features);
    if (a.parameters != b.parameters)
        return QString("%1: parameters %2 != %3").arg(a.name.c_str()).arg(a.parameters).arg(b.parameters);
    if (a.takes_precision != b.takes_precision) return QString("%1: takes_precision differs").arg(a.name.c_str());
    return {};
}

// A small GPT's op statistics at a step (schema version 5's `op_steps`): per block ln1's smallest
// variance, attn's largest logit and ln2's smallest variance, then ln_f's, in the network's order.
// A NaN logit now and then (stored as NULL), an infinite one, the smallest subnormal double as a
// variance, and values that need 17 digits.
inline std::vector<OpStepRecord> make_ops(std::int64_t step, int blocks) {
    std::vector<OpStepRecord> v;
    const auto s = static_cast<double>(step);
    for (int b = 0; b < blocks; ++b) {
        const std::string n = "blocks." + std::to_string(b);
        double logit = 3.0 + s / 7.0 + b;
        if (b == 0 && step % 7 == 3) logit = NAN;
        if (b == blocks - 1 && step % 11 == 5) logit = INFINITY;
        v.push_back({step, n + ".ln1", "min_variance", 0.5 / (s + b + 1)});
        v.push_back({step, n + ".attn", "logit_amax", logit});
        v.push_back({step, n + ".ln2", "min_variance", step % 13 == 0 ? 4.9e-324 : (b + 1) / 3.0});
    }
    v.push_back({step, "ln_f", "min_variance", 0.0625 + s * 1e-9});
    return v;
}

// Empty when equal (NaN equal to NaN), else the first field that differs.
inline QString diff(const OpStepRecord& a, const OpStepRecord& b) {
    const QString at = QString("step %1, %2 %3").arg(a.step).arg(a.name.c_str(), a.stat.c_str());
    if (a.step != b.step) return QString("step %1 != %2").arg(a.step).arg(b.step);
    if (a.name != b.name) return at + QString(": name != %1").arg(b.name.c_str());
    if (a.stat != b.stat) return at + QString(": stat != %1").arg(b.stat.c_str());
    if (!same(a.value, b.value)) return at + QString(": value %1 != %2").arg(a.value, 0, 'g', 17).arg(b.value, 0, 'g', 17);
    return {};
}

// A step's block-scale views (schema version 7's `block_scale_steps`), as two matmul layers give
// them, in the order the store reads them back (layer, then operand): fc1's x, W and dy in MXFP4,
// the format fc1 runs (x a sample of 3 of its 8 rows, and not a whole number of blocks long), and
// fc2's x and W in NVFP4, which fc2 does not run (x has no rows at all, W only blocks of zeros).
// Blocks of zeros and of NaNs among fc1's, and exponents next to the sentinels at int16's ends.
inline std::vector<BlockScaleRecord> make_block_scales(std::int64_t step) {
    auto view = [&](std::int32_t layer, MatmulOperand operand, BlockFormat format, bool own, std::int64_t rows_total,
                    std::int64_t rows, std::int64_t row_length, std::int64_t blocks_per_row) {
        BlockScaleRecord r;
        r.step = step;
        r.layer = layer;
        r.name = layer == 0 ? "fc1" : "fc2";
        r.operand = operand;
        r.format = format;
        r.own = own;
        r.rows_total = rows_total;
        r.rows = rows;
        r.row_length = row_length;
        r.blocks_per_row = blocks_per_row;
        return r;
    };
    const auto shift = static_cast<std::int16_t>(step % 5);
    std::vector<BlockScaleRecord> v;
    v.push_back(view(0, MatmulOperand::input, BlockFormat::mxfp4, true, 8, 3, 70, 3));
    v.back().exponents = {-7, static_cast<std::int16_t>(-6 - shift), -7, BlockScaleRecord::zero_block, -9, -7, -4,
                          BlockScaleRecord::nan_block, -7};
    v.push_back(view(0, MatmulOperand::weight, BlockFormat::mxfp4, true, 4, 4, 64, 2));
    v.back().exponents = {-3, -3, -2, -3, -4, -3, static_cast<std::int16_t>(-2 + shift), -3};
    v.push_back(view(0, MatmulOperand::grad_output, BlockFormat::mxfp4, true, 2, 2, 40, 2));
    v.back().exponents = {-32767, 32766, BlockScaleRecord::zero_block, static_cast<std::int16_t>(-20 - shift)};
    v.push_back(view(1, MatmulOperand::input, BlockFormat::nvfp4, false, 0, 0, 48, 3));
    v.push_back(view(1, MatmulOperand::weight, BlockFormat::nvfp4, false, 5, 5, 16, 1));
    v.back().exponents.assign(5, BlockScaleRecord::zero_block);
    return v;
}

// Empty when equal, else the first field that differs.
inline QString diff(const BlockScaleRecord& a, const BlockScaleRecord& b) {
    const QString at = QString("step %1, %2's %3").arg(a.step).arg(a.name.c_str(), matmul_operand_name(a.operand));
    if (a.step != b.step || a.layer != b.layer || a.name != b.name || a.operand != b.operand)
        return at + QString(": read back as step %1, layer %2 %3's %4")
                        .arg(b.step)
                        .arg(b.layer)
                        .arg(b.name.c_str(), matmul_operand_name(b.operand));
    if (a.format != b.format) return at + ": format differs";
    if (a.own != b.own) return at + ": own differs";
    if (a.rows_total != b.rows_total || a.rows != b.rows)
        return at + QString(": rows %1 of %2 != %3 of %4").arg(a.rows).arg(a.rows_total).arg(b.rows).arg(b.rows_total);
    if (a.row_length != b.row_length || a.blocks_per_row != b.blocks_per_row) return at + ": row sizes differ";
    if (a.exponents != b.exponents) return at + ": exponents differ";
    return {};
}

inline QByteArray file_sha256(const QString& path) {
    QFile f(path);
    if (!f.open(QIODevice::ReadOnly)) return {};
    QCryptographicHash h(QCryptographicHash::Sha256);
    h.addData(&f);
    return h.result().toHex();
}

// Damaged copies of the store at `path` (closed) as they reach a person: `copy` holds its first
// half (a copy cut short), or all of it with bytes [from, to) xor-ed with 0x5a (bad sectors), which
// needs a file longer than `to`. False when the copy could not be made so.
inline bool copy_cut_in_half(const QString& path, const QString& copy) {
    QFile in(path), out(copy);
    if (!in.open(QIODevice::ReadOnly) || !out.open(QIODevice::WriteOnly | QIODevice::Truncate)) return false;
    const QByteArray bytes = in.readAll();
    return bytes.size() > 8192 && out.write(bytes.left(bytes.size() / 2)) == bytes.size() / 2;
}

inline bool copy_with_bytes_flipped(const QString& path, const QString& copy, qsizetype from, qsizetype to) {
    QFile in(path), out(copy);
    if (!in.open(QIODevice::ReadOnly) || !out.open(QIODevice::WriteOnly | QIODevice::Truncate)) return false;
    QByteArray bytes = in.readAll();
    if (bytes.size() <= to) return false;
    for (qsizetype i = from; i < to; ++i) bytes[i] = static_cast<char>(bytes[i] ^ 0x5a);
    return out.write(bytes) == bytes.size();
}

// A plain sqlite3 connection, for building files by hand and checking what the store wrote.
class RawDb {
public:
    explicit RawDb(const QString& path, bool read_only = false) {
        sqlite3_open_v2(path.toUtf8().constData(), &m_db,
                        read_only ? SQLITE_OPEN_READONLY : (SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE), nullptr);
    }
    ~RawDb() { sqlite3_close_v2(m_db); }
    RawDb(const RawDb&) = delete;
    RawDb& operator=(const RawDb&) = delete;
    // Returns the error message, empty on success.
    QString exec(const QString& sql) {
        char* err = nullptr;
        int rc = sqlite3_exec(m_db, sql.toUtf8().constData(), nullptr, nullptr, &err);
        QString msg = rc == SQLITE_OK ? QString() : QString::fromUtf8(err ? err : sqlite3_errstr(rc));
        sqlite3_free(err);
        return msg;
    }
    // The first column of the first row, as text ("" when none or on error).
    QString text(const QString& sql) {
        sqlite3_stmt* s = nullptr;
        QString out;
        if (sqlite3_prepare_v2(m_db, sql.toUtf8().constData(), -1, &s, nullptr) == SQLITE_OK &&
            sqlite3_step(s) == SQLITE_ROW) {
            const unsigned char* t = sqlite3_column_text(s, 0);
            out = t ? QString::fromUtf8(reinterpret_cast<const char*>(t)) : QString();
        }
        sqlite3_finalize(s);
        return out;
    }
    long long integer(const QString& sql) { return text(sql).toLongLong(); }
    // Every row of a query, each value as its type and its exact value ("integer:3",
    // "real:0.10000000000000001", "text:fc1", "blob:01a2", "null"), separated by " | ": for comparing
    // rows value for value (SQL's quote() rounds reals to 15 digits). Empty on error.
    QStringList rows(const QString& sql) {
        sqlite3_stmt* s = nullptr;
        QStringList out;
        if (sqlite3_prepare_v2(m_db, sql.toUtf8().constData(), -1, &s, nullptr) != SQLITE_OK) return out;
        while (sqlite3_step(s) == SQLITE_ROW) {
            QStringList values;
            for (int c = 0; c < sqlite3_column_count(s); ++c) {
                switch (sqlite3_column_type(s, c)) {
                    case SQLITE_INTEGER: values << QString("integer:%1").arg(sqlite3_column_int64(s, c)); break;
                    case SQLITE_FLOAT: values << "real:" + QString::number(sqlite3_column_double(s, c), 'g', 17); break;
                    case SQLITE_TEXT:
                        values << "text:" + QString::fromUtf8(reinterpret_cast<const char*>(sqlite3_column_text(s, c)),
                                                              sqlite3_column_bytes(s, c));
                        break;
                    case SQLITE_BLOB:
                        values << "blob:" + QByteArray(static_cast<const char*>(sqlite3_column_blob(s, c)),
                                                       sqlite3_column_bytes(s, c))
                                                .toHex();
                        break;
                    default: values << "null";
                }
            }
            out << values.join(" | ");
        }
        sqlite3_finalize(s);
        return out;
    }
    // The columns of a table, in order.
    QStringList columns(const QString& table) {
        QStringList names;
        for (const QString& row : rows("SELECT name FROM pragma_table_info('" + table + "') ORDER BY cid"))
            names << row.mid(5);  // "text:"
        return names;
    }

private:
    sqlite3* m_db = nullptr;
};

}  // namespace store_test
