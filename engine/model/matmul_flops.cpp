// step_matmul_flops: the layer kinds that multiply matrices, found by their classes (each kind's
// header says which matmuls its forward and backward run); every other kind is looked through for
// children and otherwise counts nothing.
#include "model/matmul_flops.h"

#include <memory>

#include "model/layer.h"
#include "model/layers/attention_layer.h"
#include "model/layers/conv2d_layer.h"
#include "model/layers/linear_layer.h"
#include "model/layers/residual_layer.h"
#include "model/layers/tied_head_layer.h"
#include "model/network.h"

namespace mantissa {

namespace {

struct Counter {
    std::int64_t rows;       // samples × positions
    std::int64_t positions;  // T
    std::vector<MatmulFlops> out;

    // The three matmuls of a layer that multiplies (rows, k) by a (k, n) weight.
    void gemm(const Layer& layer, double multiply_adds, bool input_grad) {
        const LayerFormats& f = layer.formats();
        out.push_back({layer.name(), MatmulPass::forward, 2 * multiply_adds, f.compute_format(), false});
        if (input_grad) out.push_back({layer.name(), MatmulPass::dgrad, 2 * multiply_adds, f.dgrad, false});
        out.push_back({layer.name(), MatmulPass::wgrad, 2 * multiply_adds, f.wgrad, false});
    }

    void visit(Layer& layer, bool input_grad) {
        const auto r = static_cast<double>(rows);
        if (dynamic_cast<const LinearLayer*>(&layer) || dynamic_cast<const TiedHeadLayer*>(&layer)) {
            gemm(layer, r * static_cast<double>(layer.input_shape().numel() * layer.output_shape().numel()),
                 input_grad);
        } else if (const auto* conv = dynamic_cast<const Conv2dLayer*>(&layer)) {
            const Conv2dGeometry& g = conv->geometry();
            gemm(layer, r * static_cast<double>(g.out_size() * g.patch()), input_grad);
        } else if (auto* attention = dynamic_cast<AttentionLayer*>(&layer)) {
            const std::vector<Layer*> linears = attention->children();  // qkv, proj
            // Per product: samples·heads·T·T·d_h = rows·T·dim multiply-adds.
            const double product =
                2 * r * static_cast<double>(positions) * static_cast<double>(layer.input_shape().numel());
            const ComputeFormat f = attention->matmul_format();
            visit(*linears.at(0), input_grad);
            out.push_back({layer.name(), MatmulPass::forward, 2 * product, f, true});  // Q·Kᵀ, P·V
            out.push_back({layer.name(), MatmulPass::dgrad, 4 * product, f, true});    // dP, dV, dQ, dK
            visit(*linears.at(1), true);
        } else if (dynamic_cast<const ResidualLayer*>(&layer)) {
            // children(): the branch, then the projection. A chain's first layer reads the
            // residual's input; the projection starts where a child does not read the one before.
            const std::vector<Layer*> chain = layer.children();
            for (std::size_t i = 0; i < chain.size(); ++i) {
                const bool head = i == 0 || !(chain[i]->input_shape() == chain[i - 1]->output_shape());
                visit(*chain[i], input_grad || !head);
            }
        } else {
            for (Layer* child : layer.children()) visit(*child, true);
        }
    }
};

std::vector<MatmulFlops> count(const std::vector<std::unique_ptr<Layer>>& nodes, std::int64_t rows,
                               std::int64_t positions) {
    Counter c{rows, positions, {}};
    for (std::size_t i = 0; i < nodes.size(); ++i) c.visit(*nodes[i], i > 0);  // as Network::declare
    return std::move(c.out);
}

}  // namespace

const char* matmul_pass_name(MatmulPass pass) {
    switch (pass) {
    case MatmulPass::forward: return "forward";
    case MatmulPass::dgrad: return "dgrad";
    case MatmulPass::wgrad: return "wgrad";
    }
    return "?";
}

std::vector<MatmulFlops> step_matmul_flops(const Network& network, std::int64_t batch) {
    return count(network.nodes(), network.rows(batch), network.desc().positions);
}

std::vector<MatmulFlops> step_matmul_flops(const ModelDesc& desc, std::int64_t batch) {
    return count(build_layers(desc), batch * desc.positions, desc.positions);
}

double total_flops(const std::vector<MatmulFlops>& matmuls) {
    double sum = 0;
    for (const MatmulFlops& m : matmuls) sum += m.flops;
    return sum;
}

}  // namespace mantissa
