// The checks a run makes as it starts that need neither its data nor a device: the model its
// section and its dataset kind describe (model/model_plan.h), and each precision.layers entry
// against that model's layers, with the Trainer's own sentences (trainer.h, precision_layer). A
// sweep makes them for every run it plans (app/cli/cmd_sweep.cpp), so a setting the runs would
// refuse one by one is refused once, before anything is recorded. What depends on the machine the
// run lands on (its memory, a GPU, the dataset's files) is left to the run itself: a Slurm task
// runs elsewhere.
#pragma once

#include "config/experiment.h"

namespace mantissa {

// Throws mantissa::Error with the sentence the run would fail with at its start. A model that only
// its data can describe (an idx folder's CNN, a CSV's columns) has its layer names checked at Start.
void check_run_start(const Experiment& experiment);

}  // namespace mantissa
