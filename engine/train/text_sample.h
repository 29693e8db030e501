// The generated sample a language model's run shows at each evaluation: a continuation of a prompt,
// written token by token, each drawn from softmax(logits / temperature) of the last position by a
// generator seeded with `seed` alone, so the same weights give the same sample on every machine
// (up to the logits' own rounding); the chars vocabulary's unknown id is never drawn. The window
// is the model's context: the prompt and what follows it, its last T tokens once longer. With causal attention, a window shorter than T is placed at
// the start of the sample and the positions after it are never seen by the ones before, so their
// (zero) ids change nothing.
//
// Costs a forward pass of one sample per token: 160 tokens of the reference LM take about a second
// on one core. Training thread, between steps (it overwrites the network's activations).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "data/text_corpus.h"
#include "model/network.h"

namespace mantissa {

struct TextSample {
    std::string prompt;        // decoded
    std::string continuation;  // decoded: always valid UTF-8
    // Why the continuation ended before `tokens` (empty when it did not): a model whose logits are
    // all NaN or inf has no distribution to draw from, so nothing more is written.
    std::string stopped;
};

inline constexpr int kSampleTokens = 160;
inline constexpr int kSamplePromptTokens = 24;
inline constexpr float kSampleTemperature = 0.8f;

// The prompt is the first min(prompt_tokens, T - 1) tokens of the corpus's test part.
TextSample generate_text(Network& network, const data::TextCorpus& corpus, int tokens, int prompt_tokens,
                         float temperature, std::uint64_t seed);

}  // namespace mantissa
