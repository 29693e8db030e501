// What the lesson suites share: a preset of resources/experiments/lessons, loaded by file name, and
// a Trainer for it on the CPU backend with its own dataset.
#pragma once

#include <QByteArray>
#include <QtGlobal>

#include "backend/backend.h"
#include "config/experiment.h"
#include "data/dataset.h"
#include "train/trainer.h"

namespace mantissa::lesson_test {

inline Experiment preset(const char* file) {
    const QByteArray root = qgetenv("MANTISSA_SOURCE_DIR");
    if (root.isEmpty()) qFatal("MANTISSA_SOURCE_DIR is not set (run through ctest)");
    return load_experiment(root.toStdString() + "/resources/experiments/lessons/" + file);
}

inline Trainer make(const Experiment& e) {
    return Trainer(e, load_dataset(e.dataset, e.train.seed), make_backend("cpu"));
}

}  // namespace mantissa::lesson_test
