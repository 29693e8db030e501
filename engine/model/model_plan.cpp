// plan_model: an experiment's layers from its model section and the widths its dataset kind fixes
// (see model_plan.h). The widths below are the loaders' (data/idx_reader.*, data/synthetic.*);
// the plan is compared with a built Session's layers in tests/ui/test_main_window.cpp.
#include "model/model_plan.h"

#include <algorithm>

#include "data/dataset.h"
#include "data/idx_reader.h"
#include "model/layer_formats.h"
#include "model/model_desc.h"

namespace mantissa {
namespace {

constexpr int kMnistFeatures = 28 * 28;  // MNIST and Fashion-MNIST images

struct Widths {
    int features = 0;  // 0: only the data can tell
    int outputs = 0;
    bool regression = false;
};

Widths synthetic_widths(const std::string& kind, const DatasetSpec& spec) {
    if (kind == "sine") return {1, 1, true};
    return {2, spec.classes, false};  // spirals, blobs: points in the plane
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
            w = {kMnistFeatures, data::kIdxClasses, false};
        } else {
            w = synthetic_widths("spirals", d);
            plan.dataset_note = *folder.fallback;
        }
    } else if (d.kind == "idx") {
        w = {0, data::kIdxClasses, false};
    } else if (d.kind == "spirals" || d.kind == "blobs" || d.kind == "sine") {
        w = synthetic_widths(d.kind, d);
    }  // csv: the file's columns and labels decide both

    // describe_model names the layers and checks the model section; unknown widths are stood in
    // for by 1 and reported as 0.
    const ModelDesc desc = describe_model(e.model, std::max(w.features, 1), std::max(w.outputs, 1), w.regression);
    for (std::size_t i = 0; i < desc.layers.size(); ++i) {
        const LayerShape& l = desc.layers[i];
        PlannedLayer p;
        p.name = l.name;
        p.in = (i == 0 && w.features == 0) ? 0 : l.in;
        p.out = (i + 1 == desc.layers.size() && w.outputs == 0) ? 0 : l.out;
        if (const auto it = e.precision.layers.find(l.name); it != e.precision.layers.end()) p.setting = it->second;
        p.compute = resolve_layer_formats(p.setting, e.precision.autocast, e.precision.master_weights).compute;
        plan.layers.push_back(std::move(p));
    }
    return plan;
}

}  // namespace mantissa
