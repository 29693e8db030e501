// check_run_start (start_check.h).
#include "train/start_check.h"

#include "model/model_desc.h"
#include "model/model_plan.h"
#include "train/trainer.h"

namespace mantissa {

void check_run_start(const Experiment& experiment) {
    const ModelPlan plan = plan_model(experiment);  // throws for a model section the run would refuse
    if (plan.layers.empty()) return;                // only the data can describe it
    ModelDesc desc;
    for (const PlannedLayer& l : plan.layers) desc.layers.push_back(l.info);
    for (const auto& entry : experiment.precision.layers)
        precision_layer(desc, entry.first, "precision.layers." + entry.first + ": ");
}

}  // namespace mantissa
