// plan_model: an experiment's layers from its model section and the widths its dataset kind fixes
// (see model_plan.h). The widths below are the loaders' (data/idx_reader.*, data/synthetic.*);
// the plan is compared with a built Session's layers in tests/ui/test_main_window.cpp.
#include "model/model_plan.h"

#include <algorithm>

#include "data/dataset.h"
#include "data/cifar_reader.h"
#include "data/idx_reader.h"
#include "model/layer_formats.h"
#include "model/model_desc.h"
#include "model/network.h"
#include "model/op_classes.h"

namespace mantissa {
namespace {

constexpr SampleShape kMnistShape{1, 28, 28};  // MNIST and Fashion-MNIST images

struct Widths {
    SampleShape shape{};  // channels 0: only the data can tell
    int outputs = 0;
    bool regression = false;
    std::int64_t features() const { return shape.numel(); }
};

Widths synthetic_widths(const std::string& kind, const DatasetSpec& spec) {
    if (kind == "sine") return {{1, 1, 1}, 1, true};
    return {{2, 1, 1}, spec.classes, false};  // spirals, blobs: points in the plane
}

}  // namespace

ModelPlan plan_model(const Experiment& e) {
    ModelPlan plan;
    const DatasetSpec& d = e.dataset;
    Widths w;
    if (d.kind == "fashion-mnist" || d.kind == "mnist") {
        // The folder and the fallback are load_dataset's own (data/dataset.h), so the note before
        // Start is the notice the run will give.
        const IdxFolderPlan folder = plan_idx_folder(d);
        if (!folder.fallback) {
            w = {kMnistShape, data::kIdxClasses, false};
        } else {
            w = synthetic_widths("spirals", d);
            plan.dataset_note = *folder.fallback;
        }
    } else if (d.kind == "cifar10") {
        w = {data::kCifarShape, data::kCifarClasses, false};
    } else if (d.kind == "idx") {
        w = {{}, data::kIdxClasses, false};
    } else if (d.kind == "spirals" || d.kind == "blobs" || d.kind == "sine") {
        w = synthetic_widths(d.kind, d);
    } else if (d.kind == "text") {
        w = {{d.context, 1, 1}, 0, false};  // the vocabulary: known once the text is read
    }  // csv: the file's columns and labels decide both

    // describe_model names the layers and checks the model section; an unknown width is stood in
    // for by 1 and reported as 0. A model of images needs the image's shape, which only the data
    // can tell here: the plan is then empty, and Start checks the model.
    if (w.features() == 0 && e.model.kind != "mlp") return plan;
    const SampleShape input = w.features() > 0 ? w.shape : SampleShape{1, 1, 1};
    const bool text = d.kind == "text";
    const ModelDesc desc = describe_model(e.model, input, std::max(w.outputs, 1), w.regression, text ? d.context : 0);
    for (std::size_t i = 0; i < desc.layers.size(); ++i) {
        PlannedLayer p;
        p.info = desc.layers[i];
        if (i == 0 && w.features() == 0) p.info.in_features = 0;
        if (i + 1 == desc.layers.size() && w.outputs == 0) p.info.out_features = 0;
        // The token table has a row per token of the vocabulary, which only the text tells: its
        // parameters and its input, described as the vocabulary (Layer::described_input_shape),
        // are "?" until Start.
        if (!p.known() || (text && p.info.kind == "embedding")) p.info.parameters = 0;
        if (text && p.info.kind == "embedding") p.info.in_features = 0;
        if (const auto it = e.precision.layers.find(p.info.name); it != e.precision.layers.end()) p.setting = it->second;
        plan.layers.push_back(std::move(p));
    }
    // The format the run will report for each layer: the layers' own answer (Layer::formats), as
    // the Network gives them their settings.
    std::vector<LayerFormats> settings;
    for (const PlannedLayer& p : plan.layers)
        settings.push_back(resolve_layer_formats(p.setting, e.precision.autocast, e.precision.master_weights));
    const std::vector<LayerFormats> reported =
        reported_formats(desc, settings, resolve_op_formats(e.precision.ops, e.precision.autocast));
    for (std::size_t i = 0; i < plan.layers.size(); ++i) plan.layers[i].compute = reported[i].compute_format();
    return plan;
}

std::vector<std::string> matmul_layer_names(const Experiment& experiment) {
    std::vector<std::string> names;
    for (const PlannedLayer& l : plan_model(experiment).layers)
        if (l.info.takes_precision) names.push_back(l.info.name);
    return names;
}

}  // namespace mantissa
