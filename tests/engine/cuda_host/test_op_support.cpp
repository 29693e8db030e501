// What the CUDA backend says it runs (engine/backend/cuda/op_support.h), and how it cuts a
// convolution's batch into chunks: host logic, checked without a GPU.
#include <QtTest>

#include <numeric>

#include "backend/cuda/op_support.h"

using namespace mantissa;
using namespace mantissa::cuda;

class TestCudaOpSupport : public QObject {
    Q_OBJECT

private slots:
    void convolutional_ops_take_the_cpu_formats() {
        const Support yes{true, {}};
        for (BackendOp op : {BackendOp::maxpool2d, BackendOp::avgpool2d, BackendOp::global_avgpool,
                             BackendOp::batchnorm2d, BackendOp::add}) {
            for (Format f : {Format::fp32, Format::tf32, Format::fp16, Format::bf16})
                QVERIFY(cuda_op_unsupported(op, f, yes, "GPU").empty());
            const std::string why = cuda_op_unsupported(op, Format::fp8_e4m3, yes, "GPU");
            QVERIFY(!why.empty());
            QVERIFY2(why.find(backend_op_name(op)) != std::string::npos, why.c_str());
            QVERIFY2(why.find("fp8-e4m3") != std::string::npos || why.find("fp8_e4m3") != std::string::npos,
                     why.c_str());
        }
        QVERIFY(cuda_op_unsupported(BackendOp::activation, Format::fp8_e5m2, yes, "GPU").empty());
    }

    void matmuls_follow_the_gpu() {
        const Support yes{true, {}};
        const Support no{false, "compute capability 7.5 has no bf16 tensor cores (8.0 needed)"};
        QVERIFY(cuda_op_unsupported(BackendOp::conv2d, Format::bf16, yes, "T4").empty());
        QVERIFY(cuda_op_unsupported(BackendOp::conv2d, Format::fp8_e4m3, yes, "H200").empty());
        const std::string why = cuda_op_unsupported(BackendOp::conv2d, Format::bf16, no, "T4");
        QVERIFY2(why.find("convolutions") != std::string::npos && why.find("T4") != std::string::npos &&
                     why.find(no.reason) != std::string::npos,
                 why.c_str());
        const std::string lin = cuda_op_unsupported(BackendOp::linear, Format::bf16, no, "T4");
        QVERIFY2(lin.find("linear layers") != std::string::npos, lin.c_str());
        // e5m2 is a gradient format: no convolution computes in it, whatever the GPU.
        QVERIFY(!cuda_op_unsupported(BackendOp::conv2d, Format::fp8_e5m2, yes, "H200").empty());
    }

    void chunks_cover_the_batch_within_the_bound() {
        for (std::int64_t batch : {1, 7, 64, 1000})
            for (std::int64_t positions : {1, 9, 49, 196, 784, 1024})
                for (std::int64_t widest : {1, 27, 288, 4608})
                    for (std::int64_t max_values : {std::int64_t{1} << 12, std::int64_t{1} << 18, conv_column_values}) {
                        const std::int64_t n = conv_chunk_samples(batch, positions, widest, max_values);
                        QVERIFY(n >= 1 && n <= batch);
                        // Within the bound, unless one sample alone exceeds it.
                        QVERIFY(n == 1 || n * positions * widest <= max_values);
                        if (n < batch) {
                            // Not needlessly small: another step of samples would not fit.
                            const std::int64_t step = 16 / std::gcd(positions, std::int64_t{16});
                            QVERIFY(n >= step ? (n + step) * positions * widest > max_values
                                              : (n + 1) * positions * widest > max_values);
                            // Rows a multiple of 16 whenever the step fits (FP8's native shapes).
                            if (n >= step) QCOMPARE((n * positions) % 16, std::int64_t{0});
                        }
                    }
        QCOMPARE(conv_chunk_samples(0, 49, 27, conv_column_values), std::int64_t{0});
        QCOMPARE(conv_chunk_samples(128, 784, 288, conv_column_values), std::int64_t{74});  // 2^24 / 225792 = 74 (784 positions: any count of samples is 16 rows)
        QCOMPARE(conv_chunk_samples(5, 10, 10, 1000), std::int64_t{5});
        QCOMPARE(conv_chunk_samples(100, 9, 10, 2000), std::int64_t{16});  // 22 fit; 9 positions: steps of 16
    }
};

QTEST_APPLESS_MAIN(TestCudaOpSupport)
#include "test_op_support.moc"
