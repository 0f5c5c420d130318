#pragma once
/// @file host_device.hpp
/// @brief `SYMMCOMM_HD` (host+device when compiled by nvcc) and bit casts usable on both sides.

#include <cstdint>
#include <cstring>

/// @brief Marks the format helpers callable from host and device code (inline on the host).
#if defined(__CUDACC__)
#define SYMMCOMM_HD __host__ __device__ __forceinline__
#else
#define SYMMCOMM_HD inline
#endif

/// @brief Bit-level helpers of the formats (bit casts, exact powers of two, rounding), the same
/// on host and device; the encoders and decoders of formats/ are built from them.
namespace symmcomm::bits {

/// @brief The IEEE-754 bits of a float.
SYMMCOMM_HD std::uint32_t float_bits(float x) {
#if defined(__CUDA_ARCH__)
  return __float_as_uint(x);
#else
  std::uint32_t u;
  std::memcpy(&u, &x, sizeof(u));
  return u;
#endif
}

/// @brief The float with the given IEEE-754 bits.
SYMMCOMM_HD float bits_float(std::uint32_t u) {
#if defined(__CUDA_ARCH__)
  return __uint_as_float(u);
#else
  float x;
  std::memcpy(&x, &u, sizeof(x));
  return x;
#endif
}

/// @brief 2^e for e in the range of normal floats (-126..127), exactly.
SYMMCOMM_HD float exp2i(int e) {
  return bits_float(static_cast<std::uint32_t>(e + 127) << 23);
}

/// @brief Round to nearest integer, ties to even (the default IEEE mode on host and device).
SYMMCOMM_HD float round_half_even(float x) {
#if defined(__CUDA_ARCH__)
  return rintf(x);
#else
  return __builtin_rintf(x);
#endif
}

}  // namespace symmcomm::bits
