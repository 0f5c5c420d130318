// Which ranks share a GPU (gpu_share.hpp).

#include "gpu_share.hpp"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <exception>
#include <random>

namespace symmcomm::detail {

GpuShare share_of(const std::vector<GpuEntry>& entries) {
  GpuShare share;
  if (entries.empty()) return share;
  int fewest_sms = entries[0].sms;
  for (const GpuEntry& e : entries) {
    share.layer_switches &= e.layer_switches;
    fewest_sms = std::min(fewest_sms, e.sms);
    int sharing = 0;
    for (const GpuEntry& other : entries) {
      bool const same_gpu = std::memcmp(e.uuid, other.uuid, sizeof(e.uuid)) == 0;
      sharing += same_gpu ? 1 : 0;
      share.other_processes = share.other_processes || (same_gpu && other.process != e.process);
    }
    share.ranks_per_gpu = std::max(share.ranks_per_gpu, sharing);
  }
  share.sm_share = std::max(1, fewest_sms / share.ranks_per_gpu);
  share.gpu_sms = std::max(1, fewest_sms);
  return share;
}

std::uint64_t process_nonce() {
  static std::uint64_t const nonce = [] {
    // The clock and the pid still tell processes apart where no entropy source is readable.
    auto v =
        static_cast<std::uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
    v ^= static_cast<std::uint64_t>(::getpid()) << 40;
    try {
      std::random_device device;
      v ^= (static_cast<std::uint64_t>(device()) << 32) ^ device();
    } catch (const std::exception&) {
    }
    return v != 0 ? v : 1;
  }();
  return nonce;
}

}  // namespace symmcomm::detail
