#include "symmcomm/path.hpp"

namespace symmcomm {

const char* to_string(Path path) noexcept {
  switch (path) {
    case Path::NcclSymmetric:
      return "nccl-symmetric";
    case Path::LsaKernel:
      return "lsa-kernel";
    case Path::Fallback:
      return "fallback";
  }
  return "unknown";
}

const char* to_string(PathChoice choice) noexcept {
  switch (choice) {
    case PathChoice::Auto:
      return "auto";
    case PathChoice::NcclSymmetric:
      return "nccl-symmetric";
    case PathChoice::LsaKernel:
      return "lsa-kernel";
    case PathChoice::Fallback:
      return "fallback";
  }
  return "unknown";
}

}  // namespace symmcomm
