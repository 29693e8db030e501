// What the CUDA loader says when something is missing (engine/backend/cuda/cuda_loader.h): the
// build, the module, a loadable module, the driver, a GPU. A stub module (stub_module.cpp) plays
// libmantissa_cuda.so, its answers picked through $MANTISSA_CUDA_STUB; "the driver" is any
// library name the test chooses (libc stands in for a present libcuda.so.1).
#include <QtTest>

#include <QFile>
#include <QTemporaryDir>

#include "backend/cuda/cuda_loader.h"
#include "error.h"

using namespace mantissa;

namespace {

CudaLoaderOptions stub_options(const char* stub_mode, const std::string& driver = "libc.so.6") {
    qputenv("MANTISSA_CUDA_STUB", stub_mode);
    CudaLoaderOptions o;
    o.built_with_cuda = true;
    o.module_paths = {MANTISSA_CUDA_STUB_PATH};
    o.driver_library = driver;
    return o;
}

// Options that find, in `dir`, a libmantissa_cuda.so that is not an ELF file, and load `driver`.
CudaLoaderOptions unloadable_module_options(const QTemporaryDir& dir, const std::string& driver) {
    const QString path = dir.filePath("libmantissa_cuda.so");
    QFile f(path);
    if (!f.open(QIODevice::WriteOnly) || f.write("not an ELF file") < 0) qFatal("cannot write %s", qPrintable(path));
    f.close();
    CudaLoaderOptions o;
    o.built_with_cuda = true;
    o.module_paths = {path.toStdString()};
    o.driver_library = driver;
    return o;
}

QString reason_of(CudaLoader& loader) {
    return QString::fromStdString(loader.report().reason);
}

}  // namespace

class TestCudaLoader : public QObject {
    Q_OBJECT
private slots:
    void built_without_cuda() {
        CudaLoaderOptions o;
        o.built_with_cuda = false;
        o.module_paths = {MANTISSA_CUDA_STUB_PATH};
        CudaLoader loader(o);
        QCOMPARE(loader.report().missing, CudaMissing::build);
        QVERIFY(reason_of(loader).contains("built without CUDA"));
        QVERIFY(loader.report().searched.empty());  // nothing looked for
        try {
            loader.create(0);
            QFAIL("create must throw");
        } catch (const Error& e) {
            QVERIFY(QString(e.what()).contains("built without CUDA"));
        }
    }

    void module_not_found() {
        CudaLoaderOptions o;
        o.built_with_cuda = true;
        o.module_paths = {"/nonexistent/a/libmantissa_cuda.so", "/nonexistent/b/libmantissa_cuda.so",
                          "libmantissa_cuda_definitely_absent.so"};
        CudaLoader loader(o);
        QCOMPARE(loader.report().missing, CudaMissing::module);
        const QString r = reason_of(loader);
        QVERIFY2(r.contains("was not found"), qPrintable(r));
        QVERIFY2(r.contains("/nonexistent/a/libmantissa_cuda.so"), qPrintable(r));
        QVERIFY2(r.contains("/nonexistent/b/libmantissa_cuda.so"), qPrintable(r));
        QVERIFY2(r.contains("MANTISSA_CUDA_MODULE"), qPrintable(r));
        QCOMPARE(loader.report().searched.size(), std::size_t{3});
    }

    void module_not_loadable() {
        QTemporaryDir dir;
        const QString path = dir.filePath("libmantissa_cuda.so");
        CudaLoader loader(unloadable_module_options(dir, "libc.so.6"));  // a driver, so that the module is loaded
        QCOMPARE(loader.report().missing, CudaMissing::libraries);
        QVERIFY2(reason_of(loader).contains("could not be loaded"), qPrintable(reason_of(loader)));
        QVERIFY2(reason_of(loader).contains(path), qPrintable(reason_of(loader)));
    }

    void not_a_mantissa_module() {
        CudaLoaderOptions o;
        o.built_with_cuda = true;
        o.module_paths = {"libz.so.1"};  // loads fine, has no entry points
        CudaLoader loader(o);
        QCOMPARE(loader.report().missing, CudaMissing::libraries);
        QVERIFY2(reason_of(loader).contains("not a Mantissa CUDA module"), qPrintable(reason_of(loader)));
    }

    void other_interface_version() {
        CudaLoader loader(stub_options("other_abi"));
        QCOMPARE(loader.report().missing, CudaMissing::libraries);
        QVERIFY2(reason_of(loader).contains("another version of Mantissa"), qPrintable(reason_of(loader)));
    }

    void driver_missing() {
        CudaLoader loader(stub_options("two_gpus", "libmantissa_no_such_driver.so.1"));
        QCOMPARE(loader.report().missing, CudaMissing::driver);
        const QString r = reason_of(loader);
        QVERIFY2(r.contains("NVIDIA driver is not installed"), qPrintable(r));
        QVERIFY2(r.contains("libmantissa_no_such_driver.so.1"), qPrintable(r));
        QCOMPARE(QString::fromStdString(loader.report().module_path), QString(MANTISSA_CUDA_STUB_PATH));
    }

    // The driver is looked for before the module's file is loaded (the module loads the CUDA
    // runtime and cuBLAS): a module that cannot be loaded, on a machine without the driver, is
    // not loaded at all, and the report names the driver.
    void driver_looked_for_before_the_module_is_loaded() {
        QTemporaryDir dir;
        const QString path = dir.filePath("libmantissa_cuda.so");
        CudaLoader loader(unloadable_module_options(dir, "libmantissa_no_such_driver.so.1"));
        QCOMPARE(loader.report().missing, CudaMissing::driver);
        QVERIFY2(reason_of(loader).contains("libmantissa_no_such_driver.so.1"), qPrintable(reason_of(loader)));
        QCOMPARE(QString::fromStdString(loader.report().module_path), path);
    }

    void driver_too_old() {
        CudaLoader loader(stub_options("old_driver"));
        QCOMPARE(loader.report().missing, CudaMissing::driver);
        QVERIFY2(reason_of(loader).contains("update the driver"), qPrintable(reason_of(loader)));
    }

    void no_gpu() {
        CudaLoader loader(stub_options("no_gpu"));
        QCOMPARE(loader.report().missing, CudaMissing::gpu);
        QVERIFY2(reason_of(loader).contains("sees no GPU"), qPrintable(reason_of(loader)));
    }

    void only_old_gpus() {
        CudaLoader loader(stub_options("old_gpu"));
        QCOMPARE(loader.report().missing, CudaMissing::gpu);
        QVERIFY2(reason_of(loader).contains("Tesla P100"), qPrintable(reason_of(loader)));
        QVERIFY2(reason_of(loader).contains("6.1"), qPrintable(reason_of(loader)));
        QCOMPARE(loader.report().devices.size(), std::size_t{1});
        QVERIFY(!loader.report().devices[0].usable);
    }

    void devices_and_formats() {
        CudaLoader loader(stub_options("two_gpus"));
        const CudaReport& r = loader.report();
        QCOMPARE(r.missing, CudaMissing::nothing);
        QVERIFY(r.available());
        QCOMPARE(r.devices.size(), std::size_t{2});
        QCOMPARE(r.driver_version, 13000);
        const CudaDeviceReport& volta = r.devices[0];
        QVERIFY(!volta.usable);
        QVERIFY(volta.formats.empty());
        const CudaDeviceReport& hopper = r.devices[1];
        QVERIFY(hopper.usable);
        QCOMPARE(hopper.formats.size(), all_formats.size());
        QVERIFY(hopper.refused.empty());
        QCOMPARE(QString::fromStdString(hopper.summary()), QString("NVIDIA H100 (compute capability 9.0, 80.0 GiB)"));
        // Creating: the module's own message comes through, with the GPU's number.
        try {
            loader.create(1);
            QFAIL("the stub creates nothing");
        } catch (const Error& e) {
            const QString m = e.what();
            QVERIFY2(m.contains("GPU 1") && m.contains("stub module: no backend on GPU 1"), qPrintable(m));
            QVERIFY2(!m.contains(".."), qPrintable(m));
        }
        try {
            loader.create(0);
            QFAIL("the Volta is too old");
        } catch (const Error& e) {
            QVERIFY2(QString(e.what()).contains("cannot be used"), e.what());
        }
        try {
            loader.create(5);
            QFAIL("there is no GPU 5");
        } catch (const Error& e) {
            QVERIFY2(QString(e.what()).contains("GPU 5 does not exist"), e.what());
        }
    }

    void refused_formats_have_reasons() {
        CudaLoader loader(stub_options("turing"));
        const CudaReport& r = loader.report();
        QVERIFY(r.available());
        const CudaDeviceReport& t4 = r.devices[0];
        QCOMPARE(t4.formats.size(), std::size_t{2});  // fp32, fp16
        QCOMPARE(t4.refused.size(), std::size_t{4});
        for (const auto& [format, reason] : t4.refused)
            QVERIFY2(QString::fromStdString(reason).contains("7.5"), reason.c_str());
    }

    void environment_overrides_search() {
        qputenv("MANTISSA_CUDA_MODULE", "/opt/somewhere/libmantissa_cuda.so");
        const auto paths = default_cuda_module_paths();
        qunsetenv("MANTISSA_CUDA_MODULE");
        QCOMPARE(paths.size(), std::size_t{1});
        QCOMPARE(QString::fromStdString(paths[0]), QString("/opt/somewhere/libmantissa_cuda.so"));
        const auto defaults = default_cuda_module_paths();
        QVERIFY(defaults.size() >= 2);
        QCOMPARE(QString::fromStdString(defaults.back()), QString("libmantissa_cuda.so"));  // the loader's own search
    }

    void real_module_loads() {
#ifdef MANTISSA_CUDA_REAL_MODULE
        // libc stands in for the driver, so the module itself answers: with a GPU "nothing",
        // without one the CUDA runtime's own finding (no driver here, or no GPU).
        CudaLoaderOptions o;
        o.built_with_cuda = true;
        o.module_paths = {MANTISSA_CUDA_REAL_MODULE};
        o.driver_library = "libc.so.6";
        CudaLoader loader(o);
        const CudaReport& r = loader.report();
        QCOMPARE(QString::fromStdString(r.module_path), QString(MANTISSA_CUDA_REAL_MODULE));
        QVERIFY2(r.missing == CudaMissing::nothing || r.missing == CudaMissing::driver || r.missing == CudaMissing::gpu,
                 qPrintable(reason_of(loader)));
        if (r.missing == CudaMissing::driver)
            QVERIFY2(reason_of(loader).contains("driver"), qPrintable(reason_of(loader)));
#else
        QSKIP("this build has no CUDA module");
#endif
    }

    void availability_entry() {
        // The process-wide loader: whatever this machine has, the entry is consistent.
        const BackendAvailability a = cuda_backend_availability();
        QCOMPARE(QString::fromStdString(a.name), QString("cuda"));
        QCOMPARE(a.available, a.reason.empty());
        QCOMPARE(a.available, !a.device.empty());
    }
};

QTEST_GUILESS_MAIN(TestCudaLoader)
#include "test_loader.moc"
