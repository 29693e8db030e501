# tests/gpu/targets.sh: what the GPU check builds and runs, sourced by check.sh and pack.sh.
# Programs are paths inside the build folder.
GPU_CHECK_TARGETS=(mantissa_cuda mantissa-cli test_gpu_equivalence test_gpu_conv test_gpu_transformer_ops test_gpu_training test_gpu_device_step
                   bench_cuda test_cuda_format_support test_cuda_block_cache test_cuda_graph_policy
                   test_cuda_step_layout test_cuda_op_support test_cuda_loader test_cuda_convert test_cuda_optimizer_update
                   test_cuda_block_round test_cuda_fp8_scale_rule
                   mantissa_cuda_stub)
GPU_SUITES=(test_gpu_equivalence test_gpu_conv test_gpu_transformer_ops test_gpu_training test_gpu_device_step)
HOST_SUITES=(test_cuda_format_support test_cuda_block_cache test_cuda_graph_policy test_cuda_step_layout
             test_cuda_op_support
             test_cuda_loader test_cuda_convert test_cuda_optimizer_update test_cuda_block_round
             test_cuda_fp8_scale_rule)
GPU_CHECK_PROGRAMS=(app/mantissa-cli app/libmantissa_cuda.so tests/bench/bench_cuda
                    tests/engine/cuda_host/libmantissa_cuda_stub.so)
for _s in "${GPU_SUITES[@]}"; do GPU_CHECK_PROGRAMS+=("tests/gpu/$_s"); done
for _s in "${HOST_SUITES[@]}"; do GPU_CHECK_PROGRAMS+=("tests/engine/cuda_host/$_s"); done
unset _s
