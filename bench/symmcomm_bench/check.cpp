#include "check.hpp"

#include <cmath>
#include <stdexcept>

#include "symmcomm/formats/bf16.hpp"
#include "symmcomm/formats/e2m1.hpp"
#include "symmcomm/formats/fp8.hpp"

namespace symmcomm::bench::check {
namespace {

// e4m3 codes of 0.5, 1, 2 and 4: products with e2m1 values and power-of-two global scales
// keep few significant bits, so NVFP4 sums are exact in fp32.
constexpr std::uint8_t kBlockScaleCodes[4] = {0x30, 0x38, 0x40, 0x48};

float nvfp4_global(int rank) {
  return std::ldexp(1.0f, rank % 3);  // 1, 2, 4: 1/g is exact
}
float fp8_scale(int rank) {
  return std::ldexp(1.0f, rank % 4 - 1);  // 0.5 ... 4
}
int bf16_range(int ranks) {
  int const k = 128 / (ranks > 0 ? ranks : 1);
  return k < 1 ? 1 : (k > 8 ? 8 : k);
}

// An FP8 code of magnitude in [0.25, 16) with a random sign and mantissa (never NaN or inf).
std::uint8_t fp8_code(std::uint32_t h, DataType dtype) {
  std::uint32_t const sign = (h >> 31) << 7;
  std::uint32_t const exponent_step = (h >> 8) % 6;  // 6 binades
  if (dtype == DataType::Fp8E5M2) {
    return static_cast<std::uint8_t>(sign | ((13 + exponent_step) << 2) | (h & 3));
  }
  return static_cast<std::uint8_t>(sign | ((5 + exponent_step) << 3) | (h & 7));
}

}  // namespace

std::uint32_t mix(int rank, Stream stream, std::uint64_t index) {
  // splitmix64 of the three inputs.
  std::uint64_t z = index * 0x9E3779B97F4A7C15ull +
                    static_cast<std::uint64_t>(rank) * 0xBF58476D1CE4E5B9ull +
                    static_cast<std::uint64_t>(stream) * 0x94D049BB133111EBull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return static_cast<std::uint32_t>((z ^ (z >> 31)) >> 16);
}

std::vector<std::uint8_t> random_bytes(int rank, Stream stream, std::size_t first, std::size_t n) {
  std::vector<std::uint8_t> out(n);
  for (std::size_t i = 0; i < n; ++i) {
    out[i] = static_cast<std::uint8_t>(mix(rank, stream, first + i) >> 5);
  }
  return out;
}

float gathered_scale(int rank, int round) {
  return 1.0f + 0.25f * static_cast<float>(rank) + 64.0f * static_cast<float>(round % 4096);
}

ReduceInput reduce_input(DataType dtype, int rank, int ranks, std::size_t first, std::size_t n) {
  ReduceInput in;
  switch (dtype) {
    case DataType::Nvfp4:
      in.data = random_bytes(rank, Stream::Data, first / 2, n / 2);
      in.block_scales.resize(n / 16);
      for (std::size_t b = 0; b < n / 16; ++b) {
        in.block_scales[b] = kBlockScaleCodes[mix(rank, Stream::BlockScales, first / 16 + b) & 3];
      }
      in.scale = nvfp4_global(rank);
      break;
    case DataType::Fp8E4M3:
    case DataType::Fp8E5M2:
      in.data.resize(n);
      for (std::size_t i = 0; i < n; ++i)
        in.data[i] = fp8_code(mix(rank, Stream::Data, first + i), dtype);
      in.scale = fp8_scale(rank);
      break;
    case DataType::Bf16: {
      int const k = bf16_range(ranks);
      in.data.resize(2 * n);
      for (std::size_t i = 0; i < n; ++i) {
        int const v = static_cast<int>(mix(rank, Stream::Data, first + i) %
                                       static_cast<std::uint32_t>(2 * k + 1)) -
                      k;
        std::uint16_t const bits = float_to_bf16_bits(static_cast<float>(v));
        in.data[2 * i] = static_cast<std::uint8_t>(bits & 0xFF);
        in.data[2 * i + 1] = static_cast<std::uint8_t>(bits >> 8);
      }
      break;
    }
    case DataType::Fp32:
      throw std::invalid_argument("symmcomm-bench: no fp32 reduce-scatter inputs (--dtype)");
  }
  return in;
}

std::vector<std::uint16_t> reduce_expected(DataType dtype, int ranks, std::size_t first,
                                           std::size_t n) {
  std::vector<double> sum(n, 0.0);
  for (int r = 0; r < ranks; ++r) {
    ReduceInput const in = reduce_input(dtype, r, ranks, first, n);
    for (std::size_t i = 0; i < n; ++i) {
      double v = 0.0;
      switch (dtype) {
        case DataType::Nvfp4: {
          std::uint8_t const byte = in.data[i / 2];
          std::uint8_t const code = (i & 1) ? static_cast<std::uint8_t>(byte >> 4) : byte;
          v = static_cast<double>(decode_e2m1(static_cast<std::uint8_t>(code & 0xF))) *
              decode_e4m3(in.block_scales[i / 16]) / in.scale;
          break;
        }
        case DataType::Fp8E4M3:
        case DataType::Fp8E5M2:
          v = static_cast<double>(decode_fp8(
                  in.data[i], dtype == DataType::Fp8E5M2 ? Fp8Format::E5M2 : Fp8Format::E4M3)) *
              in.scale;
          break;
        case DataType::Bf16:
          v = bf16_bits_to_float(
              static_cast<std::uint16_t>(in.data[2 * i] | (in.data[2 * i + 1] << 8)));
          break;
        case DataType::Fp32:  // reduce_input refused it
          break;
      }
      sum[i] += v;
    }
  }
  std::vector<std::uint16_t> out(n);
  for (std::size_t i = 0; i < n; ++i) out[i] = float_to_bf16_bits(static_cast<float>(sum[i]));
  return out;
}

}  // namespace symmcomm::bench::check
