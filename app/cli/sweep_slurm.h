// A sweep on a Slurm cluster (docs/sweeps.md, "Slurm"): one job-array script whose task i runs
// `mantissa-cli train` for run i of the plan into a store file of its own in a folder the login
// node and the compute nodes share; submitted with sbatch; its tasks' states from squeue; their
// stores imported into the main store when collected. Never a scheduler or transport of our own.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "store/run_store.h"
#include "sweep/sweep_plan.h"

namespace mantissa::cli {

struct SlurmOptions {
    std::string partition, time;           // empty: the cluster's defaults
    int gpus_per_task = 0, cpus_per_task = 0;  // 0: not asked
    std::vector<std::string> sbatch_args;  // passed on as given
};

// Writes each run's experiment (run-<i>.json) and the array script (sweep.sbatch) into `folder`,
// for the runs `indices` of `plan`; returns the script's path.
std::string write_array_script(const std::string& folder, const SweepRow& sweep, const std::vector<PlannedRun>& plan,
                               const std::vector<std::int64_t>& indices, const SlurmOptions& options);
// sbatch --parsable SCRIPT: the job's id. Throws mantissa::Error, one sentence ending with the
// first line sbatch wrote on its standard error, when it refuses, or when sbatch is not installed.
std::string submit_array(const std::string& script);
// Each array task's state as squeue --states=all reports it ("PENDING", "RUNNING", "COMPLETED",
// "FAILED", "CANCELLED", ...), by index; empty when squeue is missing or has forgotten the job.
std::map<std::int64_t, std::string> array_task_states(const std::string& job);
// The store file of task `index` in the sweep's folder.
std::string task_store(const std::string& folder, std::int64_t index);

}  // namespace mantissa::cli
