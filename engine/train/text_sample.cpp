// generate_text: autoregressive sampling through the network's evaluation forward.
#include "train/text_sample.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "error.h"
#include "model/init.h"

namespace mantissa {

TextSample generate_text(Network& network, const data::TextCorpus& corpus, int tokens, int prompt_tokens,
                         float temperature, std::uint64_t seed) {
    const std::int64_t T = network.desc().positions, V = network.desc().outputs();
    if (T < 2 || !(temperature > 0)) throw Error("generate_text: a context of at least 2 and a positive temperature are needed.");
    const auto test = corpus.part(data::TextPart::test);
    const std::size_t p = static_cast<std::size_t>(std::min<std::int64_t>({prompt_tokens, T - 1, static_cast<std::int64_t>(test.size())}));
    std::vector<std::int32_t> window(test.begin(), test.begin() + static_cast<std::ptrdiff_t>(p));
    TextSample out;
    out.prompt = corpus.decode(window);

    Rng rng(seed * 0x9e3779b97f4a7c15ull + 0x5a4d50ull);
    std::vector<float> rows(static_cast<std::size_t>(T), 0.0f), logits;
    std::vector<double> weights(static_cast<std::size_t>(V));
    std::vector<std::int32_t> written;
    for (int n = 0; n < tokens; ++n) {
        std::fill(rows.begin(), rows.end(), 0.0f);
        for (std::size_t i = 0; i < window.size(); ++i) rows[i] = static_cast<float>(window[i]);
        network.forward(rows.data(), 1, false);
        // The logits of the window's last position: the first window.size() rows are read back.
        const std::int64_t last = static_cast<std::int64_t>(window.size()) - 1;
        logits.resize(static_cast<std::size_t>((last + 1) * V));
        network.read_rows(network.output(), logits.data(), last + 1);
        const float* l = logits.data() + last * V;
        float top = -std::numeric_limits<float>::infinity();  // the largest finite logit
        for (std::int64_t v = 0; v < V; ++v)
            if (std::isfinite(l[v])) top = std::max(top, l[v]);
        if (!std::isfinite(top)) {
            out.stopped = "The model's output is NaN or inf, so no token can be drawn.";
            break;
        }
        // The unknown id of a chars vocabulary is never a training target, so it is never drawn.
        const std::int64_t unknown = corpus.unknown_id();
        double total = 0;
        for (std::int64_t v = 0; v < V; ++v)
            total += weights[static_cast<std::size_t>(v)] =
                std::isfinite(l[v]) && v != unknown ? std::exp((l[v] - top) / temperature) : 0.0;
        double u = static_cast<double>(rng.uniform()) * total;
        std::int32_t next = static_cast<std::int32_t>(V - 1);
        for (std::int64_t v = 0; v < V; ++v) {
            u -= weights[static_cast<std::size_t>(v)];
            if (u < 0) {
                next = static_cast<std::int32_t>(v);
                break;
            }
        }
        written.push_back(next);
        window.push_back(next);
        if (static_cast<std::int64_t>(window.size()) > T) window.erase(window.begin());
    }
    out.continuation = corpus.decode(written);
    return out;
}

}  // namespace mantissa
