#pragma once
// symmcomm-bench's correctness check (-c 1): every rank's input is random but reproducible
// from (rank, what, index), so any rank can compute what it must receive without moving data,
// and every output (data, block scales, scales) is compared with a host computation.
//
// Reduce-scatter inputs are drawn so that every sum is exact in fp32 (few significant bits,
// power-of-two scales, a narrow exponent range): the host's sum is then the only right answer,
// whatever order a path adds in, and the bf16 output must be that sum rounded once, bit for bit.
// BF16 inputs are small integers whose partial sums stay exact in bf16 (NCCL rounds each step).

#include <cstddef>
#include <cstdint>
#include <vector>

#include "config.hpp"

namespace symmcomm::bench::check {

/// What a generated stream is for (part of the seed).
enum class Stream : std::uint32_t { Data = 1, BlockScales = 2, Scale = 3 };

/// A reproducible 32-bit hash of (rank, stream, index).
std::uint32_t mix(int rank, Stream stream, std::uint64_t index);

/// `n` random bytes of `rank`'s stream, starting at byte `first` (all-gather payloads).
std::vector<std::uint8_t> random_bytes(int rank, Stream stream, std::size_t first, std::size_t n);

/// `rank`'s per-rank scale as gathered in check round `round` (a float that differs per rank
/// and per round).
float gathered_scale(int rank, int round = 0);

/// One rank's reduce-scatter input, elements [first, first + n): what that rank uploads, in
/// the dtype's storage (NVFP4: packed codes then block scales; FP8: codes; BF16: bits).
struct ReduceInput {
  std::vector<std::uint8_t> data;          ///< NVFP4 n/2 bytes, FP8 n bytes, BF16 2n bytes
  std::vector<std::uint8_t> block_scales;  ///< NVFP4 only: n/16 e4m3 codes
  float scale = 1.0f;                      ///< NVFP4 global scale, FP8 dequantization scale
};

/// `rank`'s reduce input over elements [first, first + n) for `ranks` ranks (BF16's integer
/// range shrinks with the rank count so partial sums stay exact). `first` and `n` are
/// multiples of 16.
ReduceInput reduce_input(DataType dtype, int rank, int ranks, std::size_t first, std::size_t n);

/// The bf16 bits every path must produce at elements [first, first + n) of the sum over
/// `ranks` ranks: the exact sum of the dequantized inputs, rounded to bf16 once.
std::vector<std::uint16_t> reduce_expected(DataType dtype, int ranks, std::size_t first,
                                           std::size_t n);

/// Elements of `got` that differ from `want` (sizes must match; a size mismatch counts every
/// element of the longer as wrong).
template <class T>
long long count_wrong(const std::vector<T>& got, const std::vector<T>& want) {
  long long wrong = static_cast<long long>(got.size() > want.size() ? got.size() - want.size()
                                                                    : want.size() - got.size());
  std::size_t const n = got.size() < want.size() ? got.size() : want.size();
  for (std::size_t i = 0; i < n; ++i) wrong += got[i] == want[i] ? 0 : 1;
  return wrong;
}

}  // namespace symmcomm::bench::check
