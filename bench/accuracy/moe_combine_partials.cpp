// The accuracy of the MoE combine's sum when partial sums travel instead of expert rows, against
// the exact weighted sum: what a combine that sends one row per (token, expert rank) would cost.
//
// A token's output is sum_k w_k y_k over its top-k experts' outputs y_k (bf16 rows, what the
// expert GEMMs write) with its router weights w_k (fp32). The ways to sum it:
//
//   pairs          every (token, expert) row goes back to the token's rank, which sums them in
//                  fp32 in top-k slot order and rounds once (MoeGroup's combine today);
//   partials bf16  each expert rank sums its own pairs of the token in fp32 (slot order), rounds
//                  the partial to bf16 and sends one row; the token's rank sums the partials in
//                  fp32 in rank order and rounds once (a rounding per rank more);
//   partials fp32  the same with fp32 partial rows (no extra rounding, twice the bytes a row).
//
// With DeepSeek-R1's group-limited routing (top-4 of 8 groups, then top-8 of 256 experts;
// sigmoid scores, the weights normalised and scaled by 2.5) and one group per rank at EP8, a
// token's experts lie on at most 4 ranks: the table also gives the rows and bytes each way sends
// back to a token's rank from other ranks, and a second table what each MoE layer moves between
// ranks per token, dispatch and combine together. Routing and outputs come from fixed seeds, so
// one run is the figure. Output: a Markdown table; with --check, exit 1 unless the bf16 partials'
// error is at most 1.5 x the pairs' (the claim docs/moe.md makes). Usage:
// symmcomm_moe_combine_accuracy [--hidden 7168] [--tokens 256] [--check]

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "symmcomm/formats/bf16.hpp"

namespace {

constexpr int kExperts = 256, kGroups = 8, kTopkGroups = 4, kTopK = 8, kRanks = 8;
constexpr int kExpertsPerGroup = kExperts / kGroups;
constexpr float kRoutedScale = 2.5f;

struct Shape {
  int hidden = 7168, tokens = 256;
  bool check = false;
};

float to_bf16(float v) {
  return symmcomm::bf16_bits_to_float(symmcomm::float_to_bf16_bits(v));
}

// One token's experts (in top-k slot order) and weights under group-limited routing.
struct Route {
  int expert[kTopK];
  float weight[kTopK];
};

Route route(std::mt19937& rng) {
  std::normal_distribution<float> logit(0.0f, 1.0f);
  float score[kExperts];
  for (float& s : score) s = 1.0f / (1.0f + std::exp(-logit(rng)));
  // A group's score: the sum of its two best experts' scores; the best kTopkGroups groups stay.
  float group_score[kGroups];
  for (int g = 0; g < kGroups; ++g) {
    float best[2] = {0.0f, 0.0f};
    for (int e = g * kExpertsPerGroup; e < (g + 1) * kExpertsPerGroup; ++e) {
      if (score[e] > best[0]) {
        best[1] = best[0];
        best[0] = score[e];
      } else if (score[e] > best[1]) {
        best[1] = score[e];
      }
    }
    group_score[g] = best[0] + best[1];
  }
  int groups[kGroups];
  std::iota(groups, groups + kGroups, 0);
  std::partial_sort(groups, groups + kTopkGroups, groups + kGroups,
                    [&](int a, int b) { return group_score[a] > group_score[b]; });
  std::vector<int> candidates;
  for (int i = 0; i < kTopkGroups; ++i) {
    for (int e = groups[i] * kExpertsPerGroup; e < (groups[i] + 1) * kExpertsPerGroup; ++e) {
      candidates.push_back(e);
    }
  }
  std::partial_sort(candidates.begin(), candidates.begin() + kTopK, candidates.end(),
                    [&](int a, int b) { return score[a] > score[b]; });
  Route r{};
  float sum = 0.0f;
  for (int k = 0; k < kTopK; ++k) {
    r.expert[k] = candidates[static_cast<std::size_t>(k)];
    sum += score[r.expert[k]];
  }
  for (int k = 0; k < kTopK; ++k) r.weight[k] = kRoutedScale * score[r.expert[k]] / sum;
  return r;
}

Shape parse(int argc, char** argv) {
  Shape s;
  for (int i = 1; i < argc; ++i) {
    std::string const a = argv[i];
    if (a == "--check") {
      s.check = true;
      continue;
    }
    if ((a != "--hidden" && a != "--tokens") || i + 1 >= argc) {
      std::fprintf(stderr,
                   "symmcomm_moe_combine_accuracy: %s: expected --hidden N, --tokens N or "
                   "--check (see the file comment)\n",
                   a.c_str());
      std::exit(2);
    }
    int const v = std::atoi(argv[++i]);
    if (v <= 0) {
      std::fprintf(stderr, "symmcomm_moe_combine_accuracy: %s %s must be positive\n", a.c_str(),
                   argv[i]);
      std::exit(2);
    }
    (a == "--hidden" ? s.hidden : s.tokens) = v;
  }
  return s;
}

// What a token moves between ranks, dispatch (NVFP4 rows: hidden / 2 data bytes and hidden / 16
// block scales) and combine (bf16 rows) together, per layer: the all-gather/reduce-scatter layer
// (every token to every other rank and every rank's output rows back), the pairs and the
// per-(token, rank) rows with bf16 partials; `pairs` and `ranks` are the averages of other ranks'
// pairs and ranks per token.
void print_bytes(const Shape& s, double pairs, double ranks) {
  double const nvfp4_row = s.hidden / 2.0 + s.hidden / 16.0, bf16_row = 2.0 * s.hidden;
  double const others = kRanks - 1;
  const char* const names[] = {"all-gather / reduce-scatter layer",
                               "pairs (MoeGroup: one row per token and expert)",
                               "one row per token and rank, bf16 partials"};
  double const rows[] = {others, pairs, ranks};
  double const base = others * (nvfp4_row + bf16_row);
  std::printf(
      "\n| layer | rows out and back per token | bytes per token (NVFP4 out, bf16 back) | vs "
      "all-gather / reduce-scatter |\n|---|---|---|---|\n");
  for (int i = 0; i < 3; ++i) {
    double const bytes = rows[i] * (nvfp4_row + bf16_row);
    std::printf("| %s | %.2f | %.0f | %.3f |\n", names[i], rows[i], bytes, bytes / base);
  }
}

constexpr int kWays = 3;  // pairs, partials bf16, partials fp32

// The error and byte totals over every token.
struct Totals {
  double err[kWays] = {};
  double ref_norm = 0.0;
  double remote_pairs = 0.0, remote_ranks = 0.0;  // other ranks' pairs and ranks, summed
};

// One hidden element of a token routed by `r` with expert outputs `v[k]`: each way's sum against
// the exact one, into `t`.
void add_element(const Route& r, const bool (&on_rank)[kRanks], const float (&v)[kTopK],
                 Totals& t) {
  double exact = 0.0;
  float pairs = 0.0f;
  for (int k = 0; k < kTopK; ++k) {
    exact += static_cast<double>(r.weight[k]) * v[k];
    pairs = std::fma(r.weight[k], v[k], pairs);
  }
  float partial_bf16 = 0.0f, partial_fp32 = 0.0f;
  for (int q = 0; q < kRanks; ++q) {
    if (!on_rank[q]) continue;
    float p = 0.0f;
    for (int k = 0; k < kTopK; ++k) {
      if (r.expert[k] / (kExperts / kRanks) == q) p = std::fma(r.weight[k], v[k], p);
    }
    partial_bf16 += to_bf16(p);
    partial_fp32 += p;
  }
  double const out[kWays] = {to_bf16(pairs), to_bf16(partial_bf16), to_bf16(partial_fp32)};
  t.ref_norm += exact * exact;
  for (int w = 0; w < kWays; ++w) t.err[w] += (out[w] - exact) * (out[w] - exact);
}

// Token `token` (on rank token % kRanks): routed, its expert outputs drawn (bf16 rows whose
// spread differs by expert, as trained experts' do), every element summed each way.
void add_token(const Shape& s, int token, std::mt19937& rng, Totals& t) {
  std::normal_distribution<float> normal(0.0f, 1.0f);
  Route const r = route(rng);
  int const home = token % kRanks;
  bool on_rank[kRanks] = {};
  float sigma[kTopK];
  for (int k = 0; k < kTopK; ++k) {
    int const rank = r.expert[k] / (kExperts / kRanks);
    on_rank[rank] = true;
    t.remote_pairs += rank != home ? 1.0 : 0.0;
    sigma[k] = 0.5f + 1.5f * static_cast<float>(r.expert[k] % 16) / 15.0f;
  }
  for (int q = 0; q < kRanks; ++q) t.remote_ranks += on_rank[q] && q != home ? 1.0 : 0.0;
  for (int h = 0; h < s.hidden; ++h) {
    float v[kTopK];
    for (int k = 0; k < kTopK; ++k) v[k] = to_bf16(sigma[k] * normal(rng));
    add_element(r, on_rank, v, t);
  }
}

}  // namespace

int main(int argc, char** argv) {
  Shape const s = parse(argc, argv);
  std::mt19937 rng(11);
  Totals t;
  for (int token = 0; token < s.tokens; ++token) add_token(s, token, rng, t);
  double const tokens = s.tokens, row_bf16 = 2.0 * s.hidden;
  double const pairs = t.remote_pairs / tokens, ranks = t.remote_ranks / tokens;
  const char* const names[kWays] = {"pairs (one fp32 sum, one rounding)",
                                    "partials bf16 (a rounding per expert rank more)",
                                    "partials fp32"};
  double const back_rows[kWays] = {pairs, ranks, ranks};
  double const back_bytes[kWays] = {pairs * row_bf16, ranks * row_bf16, ranks * 2.0 * row_bf16};
  std::printf(
      "# The MoE combine's sum against the exact one: %d tokens, hidden %d, top-%d of %d experts "
      "(group-limited: top-%d of %d groups), %d ranks, one group each\n",
      s.tokens, s.hidden, kTopK, kExperts, kTopkGroups, kGroups, kRanks);
  std::printf(
      "| way | relative error of the output | vs pairs | rows back from other ranks per token "
      "| bytes back per token |\n|---|---|---|---|---|\n");
  for (int w = 0; w < kWays; ++w) {
    std::printf("| %s | %.3e | %.3f | %.2f | %.0f |\n", names[w], std::sqrt(t.err[w] / t.ref_norm),
                std::sqrt(t.err[w] / t.err[0]), back_rows[w], back_bytes[w]);
  }
  print_bytes(s, pairs, ranks);
  double const ratio = std::sqrt(t.err[1] / t.err[0]);
  if (s.check && ratio > 1.5) {
    std::fprintf(stderr,
                 "symmcomm_moe_combine_accuracy: bf16 partials' error is %.3f x the pairs' (more "
                 "than 1.5)\n",
                 ratio);
    return 1;
  }
  return 0;
}
