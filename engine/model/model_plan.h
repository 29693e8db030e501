// The layers an experiment will train, known without loading its dataset: what the window's
// Layers table shows between opening a file and pressing Start. The widths come from the model
// section and from what the dataset kind fixes (Fashion-MNIST and MNIST: 784 inputs and 10
// classes; spirals and blobs: 2 inputs and dataset.classes; sine: 1 and 1), including the fall
// back to spirals that load_dataset makes when an MNIST folder lacks its files. Where only the
// data can tell (an idx folder's image size, a CSV file's columns and labels), the width is 0,
// "known at Start". Session::layers() is the authority once a run is built; this plan agrees with
// it wherever it gives a width.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "numeric/compute_format.h"
#include "numeric/format.h"
#include "config/experiment.h"
#include "model/model_desc.h"

namespace mantissa {

struct PlannedLayer {
    LayerInfo info;     // widths the dataset sets are 0 ("known at Start"); so are parameters it sets
    LayerSetting setting;
    ComputeFormat compute;  // the format the run reports for it: the setting's and autocast's, or FP32
    bool known() const { return info.in_features > 0 && info.out_features > 0; }
};

struct ModelPlan {
    std::vector<PlannedLayer> layers;
    // When the dataset will not be what the file names, the notice the run will give: an MNIST
    // folder without its files (Start trains on spirals instead; data/dataset.h, plan_idx_folder).
    // Empty otherwise.
    std::string dataset_note;
};

// Cheap: reads no data, only whether an MNIST folder holds its four files. Throws mantissa::Error
// for a model section describe_model refuses (model.kind), and for a dataset path that is there
// but the wrong kind of thing (a FIFO for an IDX file), as loading it would.
ModelPlan plan_model(const Experiment& experiment);

// The names precision.layers may give a setting (linear, conv2d), in order, from plan_model: what a
// sweep's tf32 and fp8 recipes set (engine/sweep/sweep_plan.h).
std::vector<std::string> matmul_layer_names(const Experiment& experiment);

}  // namespace mantissa
