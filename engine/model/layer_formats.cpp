// resolve_layer_formats: the table in the header, as code.
#include "model/layer_formats.h"

namespace mantissa {

Format autocast_format(Autocast a) {
    switch (a) {
    case Autocast::fp16: return Format::fp16;
    case Autocast::bf16: return Format::bf16;
    case Autocast::off: break;
    }
    return Format::fp32;
}

std::optional<BlockFormat> block_format_of(LayerPrecision setting) {
    switch (setting) {
    case LayerPrecision::mxfp8_e4m3: return BlockFormat::mxfp8_e4m3;
    case LayerPrecision::mxfp8_e5m2: return BlockFormat::mxfp8_e5m2;
    case LayerPrecision::mxfp6_e3m2: return BlockFormat::mxfp6_e3m2;
    case LayerPrecision::mxfp6_e2m3: return BlockFormat::mxfp6_e2m3;
    case LayerPrecision::mxfp4: return BlockFormat::mxfp4;
    case LayerPrecision::nvfp4: return BlockFormat::nvfp4;
    default: return std::nullopt;
    }
}

namespace {

// The formats of a layer whose three matmuls all run in `setting`.
LayerFormats resolve_uniform(LayerPrecision setting, Autocast autocast, bool master_weights) {
    LayerFormats f;
    f.setting = setting;
    if ((f.block = block_format_of(setting))) {
        f.compute = Format::fp32;  // the decoded operands, multiplied in FP32
        f.output = autocast_format(autocast);
        f.weight_store = master_weights ? Format::fp32 : f.output;
        f.weight_copy = false;  // quantised on the fly, along each GEMM's reduction dimension
        f.bias_copy = f.weight_store != f.output;
        f.dgrad = f.wgrad = f.compute_format();
        return f;
    }
    switch (setting) {
    case LayerPrecision::automatic: f.compute = autocast_format(autocast); break;
    case LayerPrecision::fp32: f.compute = Format::fp32; break;
    case LayerPrecision::tf32: f.compute = Format::tf32; break;
    case LayerPrecision::fp16: f.compute = Format::fp16; break;
    case LayerPrecision::bf16: f.compute = Format::bf16; break;
    case LayerPrecision::fp8_e4m3: f.compute = Format::fp8_e4m3; break;
    default: break;  // the block-scaled settings, above
    }
    switch (f.compute) {
    case Format::fp16:
    case Format::bf16: f.output = f.compute; break;
    case Format::fp8_e4m3: f.output = autocast_format(autocast); break;
    default: f.output = Format::fp32; break;
    }
    if (master_weights || f.compute == Format::fp32 || f.compute == Format::tf32)
        f.weight_store = Format::fp32;
    else
        f.weight_store = f.output;  // fp16 / bf16 themselves; fp8: the output format
    f.weight_copy = f.fp8() || (f.weight_store != f.compute && f.compute != Format::tf32);
    f.bias_copy = f.weight_store != f.output;
    f.dgrad = f.wgrad = f.compute_format();
    return f;
}

}  // namespace

LayerFormats resolve_layer_formats(const LayerSetting& setting, Autocast autocast, bool master_weights) {
    LayerFormats f = resolve_uniform(setting.forward, autocast, master_weights);
    f.setting = setting;
    f.dgrad = resolve_uniform(setting.dgrad, autocast, master_weights).compute_format();
    f.wgrad = resolve_uniform(setting.wgrad, autocast, master_weights).compute_format();
    f.fp16_accumulation = setting.accumulate == Accumulation::fp16;
    return f;
}

}  // namespace mantissa
