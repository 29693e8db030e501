// Fuzz target: loading an experiment file (load_experiment: read_user_file, parse_json and
// experiment_from_json, with the file named in each sentence). An experiment that loads survives a
// round trip through experiment_to_json unchanged; a refusal is mantissa::Error with one sentence.
// Corpus: tests/fuzz/corpus/fuzz_experiment (docs/fuzzing.md).
#include <nlohmann/json.hpp>

#include "error.h"
#include "fuzz_util.h"
#include "config/experiment.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string path = fuzz::write_input("experiment.json", data, size);
    try {
        const mantissa::Experiment e = mantissa::load_experiment(path);
        if (mantissa::experiment_from_json(mantissa::experiment_to_json(e)) != e)
            fuzz::fail("an experiment that changes in a round trip through JSON");
    } catch (const mantissa::Error& e) {
        fuzz::check_sentence(e.what());
    }
    return 0;
}
