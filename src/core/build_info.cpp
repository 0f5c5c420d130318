// The CUDA architectures of this build (symmcomm/build_info.hpp), from the list CMake compiled
// the library for (SYMMCOMM_CUDA_ARCHITECTURES, defined for this file by src/CMakeLists.txt).

#include "symmcomm/build_info.hpp"

#include <cctype>
#include <cstring>
#include <string>

#ifndef SYMMCOMM_CUDA_ARCHITECTURES
#error "src/CMakeLists.txt defines SYMMCOMM_CUDA_ARCHITECTURES for this file"
#endif

namespace symmcomm {
namespace {

// One entry of the list: "90", "90-real", "100a-virtual", ...
struct Entry {
  int number = 0;         // 90, 100, 120
  bool specific = false;  // "a": runs on exactly this architecture
  bool family = false;    // "f": runs on this architecture's family (same major)
  bool sass = false;
  bool ptx = false;
  bool valid = false;
};

Entry parse(const std::string& text) {
  Entry e;
  std::size_t i = 0;
  while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i])) != 0) {
    e.number = e.number * 10 + (text[i] - '0');
    ++i;
  }
  if (i == 0) return e;  // "native", "all", "all-major": not a list
  if (i < text.size() && text[i] == 'a') e.specific = true;
  if (i < text.size() && text[i] == 'f') e.family = true;
  if (e.specific || e.family) ++i;
  std::string const kind = text.substr(i);
  e.sass = kind.empty() || kind == "-real";
  e.ptx = kind.empty() || kind == "-virtual";
  e.valid = kind.empty() || kind == "-real" || kind == "-virtual";
  return e;
}

bool sass_runs(const Entry& e, int cc) {
  if (!e.sass) return false;
  if (e.specific) return e.number == cc;
  // Same major, this minor or a later one (sm_100 SASS on sm_103).
  return e.number / 10 == cc / 10 && e.number % 10 <= cc % 10;
}

}  // namespace

const char* to_string(DeviceCode code) noexcept {
  switch (code) {
    case DeviceCode::Sass:
      return "sass";
    case DeviceCode::Ptx:
      return "ptx-jit";
    case DeviceCode::None:
      return "none";
    case DeviceCode::Unknown:
      return "unknown";
  }
  return "unknown";
}

const char* built_cuda_architectures() noexcept {
  return SYMMCOMM_CUDA_ARCHITECTURES;
}

DeviceCode device_code(const char* architectures, int major, int minor) noexcept {
  try {
    int const cc = major * 10 + minor;
    bool ptx = false;
    std::string const list = architectures != nullptr ? architectures : "";
    std::size_t start = 0;
    while (start <= list.size()) {
      std::size_t end = list.find(',', start);
      if (end == std::string::npos) end = list.size();
      Entry const e = parse(list.substr(start, end - start));
      if (!e.valid) return DeviceCode::Unknown;
      if (sass_runs(e, cc)) return DeviceCode::Sass;
      // PTX of an arch-specific or family build is not portable to later GPUs.
      if (e.ptx && !e.specific && !e.family && e.number <= cc) ptx = true;
      start = end + 1;
    }
    return ptx ? DeviceCode::Ptx : DeviceCode::None;
  } catch (...) {  // out of host memory: cannot tell
    return DeviceCode::Unknown;
  }
}

DeviceCode device_code(int major, int minor) noexcept {
  return device_code(built_cuda_architectures(), major, minor);
}

}  // namespace symmcomm
