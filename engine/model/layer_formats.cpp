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

LayerFormats resolve_layer_formats(LayerPrecision setting, Autocast autocast, bool master_weights) {
    LayerFormats f;
    f.setting = setting;
    switch (setting) {
    case LayerPrecision::automatic: f.compute = autocast_format(autocast); break;
    case LayerPrecision::fp32: f.compute = Format::fp32; break;
    case LayerPrecision::tf32: f.compute = Format::tf32; break;
    case LayerPrecision::fp16: f.compute = Format::fp16; break;
    case LayerPrecision::bf16: f.compute = Format::bf16; break;
    case LayerPrecision::fp8_e4m3: f.compute = Format::fp8_e4m3; break;
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
    return f;
}

}  // namespace mantissa
