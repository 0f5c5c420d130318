#pragma once
/// @file traits.hpp
/// @brief Element formats known to symmcomm and their traits: bits per element, bytes for a
/// count, and the NCCL datatype where NCCL has one.

#include <cstddef>
#include <cstdint>

#include "symmcomm/formats/fp8.hpp"
#include "symmcomm/formats/host_device.hpp"
#include "symmcomm/formats/nvfp4.hpp"

namespace symmcomm {

/// @brief The element formats symmcomm moves and reduces.
enum class DataType : std::uint8_t { Nvfp4, Fp8E4M3, Fp8E5M2, Bf16, Fp32 };

/// @brief A short lowercase name ("nvfp4", "fp8e4m3", "fp8e5m2", "bf16", "fp32").
constexpr const char* to_string(DataType t) noexcept {
  switch (t) {
    case DataType::Nvfp4:
      return "nvfp4";
    case DataType::Fp8E4M3:
      return "fp8e4m3";
    case DataType::Fp8E5M2:
      return "fp8e5m2";
    case DataType::Bf16:
      return "bf16";
    case DataType::Fp32:
      return "fp32";
  }
  return "unknown";
}

/// @brief Bits of payload per element (NVFP4: 4, its block scales counted separately).
constexpr int bits_per_element(DataType t) noexcept {
  switch (t) {
    case DataType::Nvfp4:
      return 4;
    case DataType::Fp8E4M3:
    case DataType::Fp8E5M2:
      return 8;
    case DataType::Bf16:
      return 16;
    case DataType::Fp32:
      return 32;
  }
  return 0;
}

/// @brief True for formats narrower than a byte (two or more elements share a byte).
constexpr bool is_subbyte(DataType t) noexcept {
  return bits_per_element(t) < 8;
}

/// @brief Bytes of payload for `count` elements (rounded up for sub-byte formats).
constexpr std::size_t payload_bytes(DataType t, std::size_t count) noexcept {
  return (count * static_cast<std::size_t>(bits_per_element(t)) + 7) / 8;
}

/// @brief Bytes of NVFP4 block scales for `count` elements (one byte per 16 elements).
constexpr std::size_t nvfp4_scale_bytes(std::size_t count) noexcept {
  return (count + kNvfp4BlockSize - 1) / kNvfp4BlockSize;
}

/// @brief The FP8 encoding of an FP8 DataType (E4M3 for the others). Host and device.
SYMMCOMM_HD constexpr Fp8Format fp8_format_of(DataType t) noexcept {
  return t == DataType::Fp8E5M2 ? Fp8Format::E5M2 : Fp8Format::E4M3;
}

/// @brief The DataType of an FP8 encoding.
SYMMCOMM_HD constexpr DataType fp8_type(Fp8Format f) noexcept {
  return f == Fp8Format::E5M2 ? DataType::Fp8E5M2 : DataType::Fp8E4M3;
}

/// @brief Compile-time traits for a DataType.
template <DataType T>
struct FormatTraits {
  static constexpr DataType type = T;               ///< the type described
  static constexpr int bits = bits_per_element(T);  ///< bits per element (4 for NVFP4)
  static constexpr bool subbyte = is_subbyte(T);    ///< two elements share a byte
};

}  // namespace symmcomm
