// The ordering contract of docs/engine-integration.md ("Stream ordering and buffer reuse"), under
// stress: 200 rounds of in-place reduce-scatter and in-place all-gather per path, each round
// with fresh inputs written in stream order on the call's stream (cudaMemcpyAsync from pinned
// host memory) right after the previous call was enqueued, no host synchronisation between
// rounds. A rank may overwrite its inputs and read its outputs as soon as its own call has
// completed on its stream, while its peers may still be inside theirs: if any path let a peer
// read an input after the owner's call completed (or write an output before the owner's call
// began), some round would see another round's values.

#include <cuda_runtime_api.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "multi_rank/checks.hpp"
#include "multi_rank/world.hpp"
#include "support/tensors.hpp"
#include "symmcomm/collectives/all_gather.hpp"
#include "symmcomm/collectives/reduce_scatter.hpp"
#include "symmcomm/formats/bf16.hpp"

namespace symmcomm::test {
namespace {

constexpr int kRounds = 200;

// Pinned host memory: copies from it are asynchronous and ordered on the stream they are
// enqueued on.
template <class T>
class Pinned {
 public:
  explicit Pinned(std::size_t count) : count_(count) {
    SYMMCOMM_CUDA_TRY(cudaMallocHost(&ptr_, count * sizeof(T)));
  }
  Pinned(const Pinned&) = delete;
  Pinned& operator=(const Pinned&) = delete;
  ~Pinned() { cudaFreeHost(ptr_); }
  T* get(std::size_t at = 0) const { return ptr_ + at; }
  std::vector<T> slice(std::size_t at, std::size_t n) const {
    return std::vector<T>(ptr_ + at, ptr_ + at + n);
  }
  std::size_t count() const { return count_; }

 private:
  T* ptr_ = nullptr;
  std::size_t count_ = 0;
};

void enqueue_copy(void* dst, const void* src, std::size_t bytes) {
  SYMMCOMM_CUDA_TRY(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, world().stream));
}

// Round k's bf16 input of `rank`: small integers, so every partial sum is exact in bf16.
float rs_value(int round, int rank, std::size_t i) {
  return static_cast<float>(static_cast<int>((i * 7 + static_cast<std::size_t>(rank) * 13 +
                                              static_cast<std::size_t>(round) * 29) %
                                             17) -
                            8);
}

TEST(MultiRankStreamOrder, InPlaceReduceScatterWithFreshInputsEveryRoundNoHostWait) {
  World& w = world();
  std::size_t const shard = 2048;
  std::size_t const total = shard * static_cast<std::size_t>(w.size);
  std::size_t const mine = static_cast<std::size_t>(w.rank) * shard;
  Pinned<std::uint16_t> inputs(total * kRounds), outputs(shard * kRounds);
  for (int k = 0; k < kRounds; ++k) {
    for (std::size_t i = 0; i < total; ++i) {
      *inputs.get(static_cast<std::size_t>(k) * total + i) =
          float_to_bf16_bits(rs_value(k, w.rank, i));
    }
  }
  PoolArray<std::uint16_t> buffer(total);
  for (PathChoice choice : paths_to_try(caps().symmetric_memory, false)) {
    std::memset(outputs.get(), 0xAB, outputs.count() * sizeof(std::uint16_t));
    Options o;
    o.path = choice;
    Path taken = Path::Fallback;
    for (int k = 0; k < kRounds; ++k) {
      auto const round = static_cast<std::size_t>(k);
      enqueue_copy(buffer.get(), inputs.get(round * total), total * 2);
      taken =
          reduce_scatter(w.comm, Bf16Span{reinterpret_cast<bf16*>(buffer.get()), total},
                         Bf16Span{reinterpret_cast<bf16*>(buffer.get() + mine), shard}, w.stream, o)
              .path;
      enqueue_copy(outputs.get(round * shard), buffer.get() + mine, shard * 2);
    }
    sync();
    std::string const at = std::string("in-place bf16 reduce_scatter (") + to_string(choice) + ")";
    expect_path(choice, taken, at);
    int wrong_rounds = 0;
    for (int k = 0; k < kRounds; ++k) {
      std::vector<std::uint16_t> want(shard);
      for (std::size_t i = 0; i < shard; ++i) {
        float s = 0.0f;
        for (int r = 0; r < w.size; ++r) s += rs_value(k, r, mine + i);
        want[i] = float_to_bf16_bits(s);
      }
      auto const got = outputs.slice(static_cast<std::size_t>(k) * shard, shard);
      if (first_difference(got, want) != -1 && ++wrong_rounds <= 3) {
        EXPECT_SAME_VECTORS(got, want, at + ", round " + std::to_string(k));
      }
    }
    EXPECT_EQ(wrong_rounds, 0) << at << ": rounds of " << kRounds << " with wrong sums";
  }
}

TEST(MultiRankStreamOrder, InPlaceNvfp4AllGatherWithFreshInputsEveryRoundNoHostWait) {
  World& w = world();
  std::size_t const part = 4096;  // elements per rank
  std::size_t const n = static_cast<std::size_t>(w.size);
  std::size_t const data_bytes = part / 2, scale_bytes = part / 16;
  std::size_t const me = static_cast<std::size_t>(w.rank);
  auto const data_of = [&](int k, int r) { return random_bytes(data_bytes, seed_of(r, 1000 + k)); };
  auto const scales_of = [&](int k, int r) {
    return random_bytes(scale_bytes, seed_of(r, 5000 + k));
  };
  auto const global_of = [](int k, int r) {
    return 1.0f + static_cast<float>(r) + 0.5f * static_cast<float>(k);
  };
  // This rank's part of every round, and room for every round's whole gathered tensor.
  Pinned<std::uint8_t> my_data(data_bytes * kRounds), my_scales(scale_bytes * kRounds);
  Pinned<float> my_global(kRounds);
  for (int k = 0; k < kRounds; ++k) {
    auto const round = static_cast<std::size_t>(k);
    auto const d = data_of(k, w.rank);
    auto const s = scales_of(k, w.rank);
    std::memcpy(my_data.get(round * data_bytes), d.data(), data_bytes);
    std::memcpy(my_scales.get(round * scale_bytes), s.data(), scale_bytes);
    *my_global.get(round) = global_of(k, w.rank);
  }
  Pinned<std::uint8_t> got_data(data_bytes * n * kRounds), got_scales(scale_bytes * n * kRounds);
  Pinned<float> got_globals(n * kRounds);
  PoolArray<std::uint8_t> data(data_bytes * n), scales(scale_bytes * n);
  PoolArray<float> globals(n);
  Nvfp4View const recv{data.get(), scales.get(), globals.get(), part * n};
  Nvfp4View const send{data.get() + me * data_bytes, scales.get() + me * scale_bytes,
                       globals.get() + me, part};
  for (PathChoice choice : paths_to_try(caps().symmetric_memory, lsa_can())) {
    std::memset(got_data.get(), 0xAB, got_data.count());
    Options o;
    o.path = choice;
    Path taken = Path::Fallback;
    for (int k = 0; k < kRounds; ++k) {
      auto const round = static_cast<std::size_t>(k);
      enqueue_copy(send.data, my_data.get(round * data_bytes), data_bytes);
      enqueue_copy(send.block_scales, my_scales.get(round * scale_bytes), scale_bytes);
      enqueue_copy(send.global_scale, my_global.get(round), sizeof(float));
      taken = all_gather(w.comm, send, recv, w.stream, o).path;
      enqueue_copy(got_data.get(round * n * data_bytes), recv.data, n * data_bytes);
      enqueue_copy(got_scales.get(round * n * scale_bytes), recv.block_scales, n * scale_bytes);
      enqueue_copy(got_globals.get(round * n), recv.global_scale, n * sizeof(float));
    }
    sync();
    std::string const at = std::string("in-place NVFP4 all_gather (") + to_string(choice) + ")";
    expect_path(choice, taken, at);
    int wrong_rounds = 0;
    for (int k = 0; k < kRounds; ++k) {
      auto const round = static_cast<std::size_t>(k);
      bool round_ok = true;
      for (int r = 0; r < w.size; ++r) {
        auto const rr = static_cast<std::size_t>(r);
        round_ok =
            round_ok &&
            got_data.slice((round * n + rr) * data_bytes, data_bytes) == data_of(k, r) &&
            got_scales.slice((round * n + rr) * scale_bytes, scale_bytes) == scales_of(k, r) &&
            *got_globals.get(round * n + rr) == global_of(k, r);
      }
      if (!round_ok && ++wrong_rounds <= 3) {
        ADD_FAILURE() << at << ": round " << k << " gathered another round's or poisoned bytes";
      }
    }
    EXPECT_EQ(wrong_rounds, 0) << at << ": rounds of " << kRounds << " with wrong bytes";
  }
}

}  // namespace
}  // namespace symmcomm::test
