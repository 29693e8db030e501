// What linear and conv2d share: a precision setting (their LayerFormats, layer_formats.h), the FP8
// scaling state an fp8-e4m3 setting needs, and the rule for when the input is kept as a cast copy
// for backward (x not already in the operand format). Each is a matmul with the same rounding
// points (docs/numerics.md).
#pragma once

#include <memory>
#include <string>

#include "model/layer.h"

namespace mantissa {

class MatmulLayer : public Layer {
public:
    using Layer::Layer;
    bool has_parameters() const override { return true; }
    bool takes_precision() const override { return true; }
    const LayerFormats& formats() const override { return m_formats; }
    void set_formats(const LayerFormats& formats) override { m_formats = formats; }
    Format output_format() const override { return m_formats.output; }

    const Fp8State* fp8_state() const override { return m_fp8.get(); }
    Fp8State* fp8_state() override { return m_fp8.get(); }
    void end_step(Backend& backend) override {
        if (m_fp8) backend.update_fp8_scales(*m_fp8);
    }
    void set_fp8_scaling(Fp8Scaling scaling) override {
        if (m_fp8) m_fp8->set_scaling(scaling);
    }
    void set_operand_observer(OperandObserver* observer) override { m_observer = observer; }
    const Tensor& output() const override { return *m_y; }
    const Tensor* input_grad() const override { return m_dx.get(); }
    // The weight (its gradient gets the per-layer statistics), then the bias when there is one.
    std::vector<Parameter> parameters() override {
        std::vector<Parameter> p{{m_weight.get(), m_grad_weight.get(), true}};
        if (m_has_bias) p.push_back({m_bias.get(), m_grad_bias.get(), false});
        return p;
    }

protected:
    // "" when `backend` runs this layer's matmuls (op: linear or conv2d) in its formats.
    std::string unsupported_matmul(const Backend& backend, BackendOp op) const {
        const bool block = m_formats.block || m_formats.dgrad.block || m_formats.wgrad.block;
        if (block) {
            const BackendOp blocks = op == BackendOp::linear ? BackendOp::block_scaled : BackendOp::block_scaled_conv;
            if (std::string why = backend.unsupported(blocks, Format::fp32); !why.empty()) return why;
        }
        if (m_formats.gemms_differ()) {
            const BackendOp mix = op == BackendOp::linear ? BackendOp::per_gemm : BackendOp::per_gemm_conv;
            if (std::string why = backend.unsupported(mix, Format::fp32); !why.empty()) return why;
            // Each backward matmul in a tensor format the backend multiplies in (a GPU's FP8, say).
            for (const ComputeFormat* f : {&m_formats.dgrad, &m_formats.wgrad})
                if (!f->block)
                    if (std::string why = backend.unsupported(op, f->format); !why.empty()) return why;
        }
        if (m_formats.fp16_accumulation) {
            if (op != BackendOp::linear)
                return "FP16 accumulation is offered for linear layers only; accumulate this layer in fp32.";
            if (!m_formats.all_fp16())
                return std::string("FP16 accumulation needs the layer's three matmuls in fp16 (they run in ") +
                       std::string(m_formats.compute_format().name()) + " here), as cuBLAS's CUBLAS_COMPUTE_16F does; "
                       "set the layer to fp16, or accumulate in fp32.";
            if (std::string why = backend.unsupported(BackendOp::fp16_accumulation, Format::fp16); !why.empty())
                return why;
        }
        if (m_formats.stochastic_gradients) {
            const BackendOp rounding =
                op == BackendOp::linear ? BackendOp::stochastic_gradients : BackendOp::stochastic_conv_gradients;
            if (std::string why = backend.unsupported(rounding, Format::fp32); !why.empty()) return why;
        }
        return backend.unsupported(op, m_formats.compute);
    }
    // x cast to the operand format is kept for backward: always for FP8 (scaled), and for fp16 and
    // bf16 when x is not already a value of that format.
    bool needs_saved_input(Format input_format) const {
        const Format operand = m_formats.compute;
        return m_formats.fp8() ||
               ((operand == Format::fp16 || operand == Format::bf16) && !format_contains(operand, input_format));
    }
    // Creates or drops the FP8 state as the formats ask (declare's last step): any of the three
    // matmuls in FP8 keeps one.
    void declare_fp8(const DeclareContext& c) {
        if (m_formats.any_fp8() && !m_fp8) m_fp8 = c.backend.create_fp8_state(c.fp8_recipe);
        if (!m_formats.any_fp8()) m_fp8.reset();
    }

    // The tensors both backend calls take (LinearTensors, ConvTensors: the same roles), as declared.
    template <class Tensors>
    Tensors matmul_tensors() const {
        Tensors t;
        t.compute = m_formats.compute;
        t.weight = m_weight.get();
        t.weight_compute = m_weight_compute.get();
        t.bias = m_bias.get();
        t.bias_compute = m_bias_compute.get();
        t.grad_weight = m_grad_weight.get();
        t.grad_bias = m_grad_bias.get();
        t.saved_input = m_saved_input.get();
        t.fp8 = m_fp8.get();
        t.block = m_formats.block;
        if (m_formats.gemms_differ()) t.dgrad = m_formats.dgrad, t.wgrad = m_formats.wgrad;
        t.fp16_accumulation = m_formats.fp16_accumulation;
        t.stochastic_gradients = m_formats.stochastic_gradients;
        return t;
    }

    // The start of backward: on a statistics step (weight_stats set), the operands to the observer.
    void show_operands(Backend& backend, const Tensor& x, const Tensor& dy, std::int64_t rows, std::int64_t in,
                       std::int64_t out, const std::optional<Conv2dGeometry>& conv,
                       const std::vector<RoundingStats>* weight_stats) const {
        if (!m_observer || !weight_stats) return;
        m_observer->observe(backend, MatmulOperands{*this, x, *m_weight, dy, rows, in, out, conv, m_fp8.get()});
    }

    LayerFormats m_formats;
    OperandObserver* m_observer = nullptr;
    std::unique_ptr<Fp8State> m_fp8;
    bool m_has_bias = true;  // a convolution may have none
    // Declared by the kind's declare(); m_bias and m_grad_bias stay null without a bias.
    std::unique_ptr<Tensor> m_weight, m_weight_compute, m_bias, m_bias_compute, m_grad_weight, m_grad_bias;
    std::unique_ptr<Tensor> m_saved_input, m_y, m_dx;
};

}  // namespace mantissa
