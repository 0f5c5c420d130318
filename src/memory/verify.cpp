#include "symmcomm/memory/verify.hpp"
#include "comm/comm_state.hpp"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <array>
#include <sstream>

#include "comm/wait_internal.hpp"
#include "core/cuda_utils.hpp"
#include "symmcomm/comm/group.hpp"
#include "symmcomm/comm/wait.hpp"
#include "symmcomm/error.hpp"

namespace symmcomm {
namespace {

// One entry of a rank's layout: {kind, a, b, c}.
//   kind 1: window number a (registration order) of c bytes
//   kind 2 + p: pool p (creation order) arena a: b == ~0 -> the arena itself of c bytes,
//               else a live allocation at offset b of c bytes
using Entry = std::array<std::uint64_t, 4>;
constexpr std::uint64_t kArenaMarker = ~std::uint64_t{0};

std::vector<Entry> local_layout(const detail::CommState& state) {
  std::vector<Entry> entries;
  std::lock_guard lock(state.mutex);
  std::uint64_t ordinal = 0;
  for (const auto& [seq, bytes] : state.live_windows) entries.push_back({1, ordinal++, 0, bytes});
  std::uint64_t pool = 0;
  for (const auto* participant : state.participants) {
    for (const auto& r : participant->symmetry_records()) {
      entries.push_back({2 + pool, r.arena, r.offset, r.bytes});
    }
    ++pool;
  }
  return entries;
}

std::uint64_t digest(const std::vector<Entry>& entries) {
  std::uint64_t h = 1469598103934665603ull;  // FNV-1a
  for (const auto& e : entries) {
    for (std::uint64_t w : e) {
      for (int i = 0; i < 8; ++i) {
        h ^= (w >> (8 * i)) & 0xffu;
        h *= 1099511628211ull;
      }
    }
  }
  return h;
}

std::string describe(const Entry& e) {
  std::ostringstream os;
  if (e[0] == 0) {
    os << "nothing";
  } else if (e[0] == 1) {
    os << "symmetric window #" << e[1] << " of " << e[3] << " bytes";
  } else if (e[2] == kArenaMarker) {
    os << "pool #" << e[0] - 2 << " arena #" << e[1] << " of " << e[3] << " bytes";
  } else {
    os << "pool #" << e[0] - 2 << " allocation at offset " << e[2] << " of arena #" << e[1] << ", "
       << e[3] << " bytes";
  }
  return os.str();
}

struct RankWork {
  const Communicator* comm = nullptr;
  cudaStream_t stream = nullptr;
  std::vector<std::uint64_t> local;
  std::vector<std::uint64_t> gathered;
};

// All-gathers each rank's `local` (all of the same length) into `gathered`.
void all_gather_words(std::vector<RankWork>& ranks) {
  struct Scratch {
    std::uint64_t* send = nullptr;
    std::uint64_t* recv = nullptr;
  };
  std::vector<Scratch> scratch(ranks.size());
  auto release = [&] {
    for (std::size_t i = 0; i < ranks.size(); ++i) {
      detail::DeviceGuard guard(ranks[i].comm->device());
      cudaFree(scratch[i].send);
      cudaFree(scratch[i].recv);
    }
  };
  try {
    for (std::size_t i = 0; i < ranks.size(); ++i) {
      auto& r = ranks[i];
      detail::DeviceGuard guard(r.comm->device());
      std::size_t const words = r.local.size();
      r.gathered.assign(words * static_cast<std::size_t>(r.comm->size()), 0);
      SYMMCOMM_CUDA_TRY(cudaMalloc(&scratch[i].send, std::max<std::size_t>(words, 1) * 8));
      SYMMCOMM_CUDA_TRY(
          cudaMalloc(&scratch[i].recv, std::max<std::size_t>(r.gathered.size(), 1) * 8));
      SYMMCOMM_CUDA_TRY(cudaMemcpyAsync(scratch[i].send, r.local.data(), words * 8,
                                        cudaMemcpyHostToDevice, r.stream));
    }
    {
      Group group;
      for (std::size_t i = 0; i < ranks.size(); ++i) {
        auto& r = ranks[i];
        detail::DeviceGuard guard(r.comm->device());
        SYMMCOMM_NCCL_TRY(ncclAllGather(scratch[i].send, scratch[i].recv, r.local.size(),
                                        ncclUint64, r.comm->get(), r.stream));
      }
      group.end();
    }
    for (std::size_t i = 0; i < ranks.size(); ++i) {
      auto& r = ranks[i];
      detail::DeviceGuard guard(r.comm->device());
      // A peer that never joins must not hang the verifier: watch NCCL's async error state
      // before copying (wait_internal.hpp says why the copy comes after the wait).
      detail::copy_to_host_after(*detail::state_of(*r.comm), r.gathered.data(), scratch[i].recv,
                                 r.gathered.size() * 8, r.stream, default_wait_timeout(),
                                 "verify_symmetric");
    }
  } catch (...) {
    release();
    throw;
  }
  release();
}

}  // namespace

void verify_symmetric(const std::vector<const Communicator*>& comms,
                      const std::vector<cudaStream_t>& streams) {
  SYMMCOMM_EXPECTS(!comms.empty(), "verify_symmetric: no communicators given");
  SYMMCOMM_EXPECTS(streams.empty() || streams.size() == comms.size(),
                   "verify_symmetric: " << streams.size() << " streams for " << comms.size()
                                        << " communicators");
  std::vector<RankWork> ranks(comms.size());
  std::vector<std::vector<Entry>> layouts(comms.size());
  for (std::size_t i = 0; i < comms.size(); ++i) {
    SYMMCOMM_EXPECTS(comms[i] != nullptr && *comms[i],
                     "verify_symmetric: comms[" << i << "] is empty");
    detail::state_of(*comms[i])->check_usable("verify_symmetric");
    ranks[i].comm = comms[i];
    ranks[i].stream = streams.empty() ? nullptr : streams[i];
    layouts[i] = local_layout(*detail::state_of(*comms[i]));
    ranks[i].local = {digest(layouts[i]), layouts[i].size()};
  }
  // Round 1: digests and entry counts (fixed size: no rank can disagree about the message size).
  all_gather_words(ranks);
  bool all_equal = true;
  std::uint64_t max_entries = 0;
  for (const auto& r : ranks) {
    for (std::size_t k = 0; k < static_cast<std::size_t>(r.comm->size()); ++k) {
      all_equal =
          all_equal && r.gathered[2 * k] == r.gathered[0] && r.gathered[2 * k + 1] == r.gathered[1];
      max_entries = std::max(max_entries, r.gathered[2 * k + 1]);
    }
  }
  if (all_equal) return;
  // Round 2: the full layouts, padded to the longest (known to every rank after round 1).
  for (std::size_t i = 0; i < ranks.size(); ++i) {
    ranks[i].local.assign(max_entries * 4, 0);
    for (std::size_t e = 0; e < layouts[i].size(); ++e) {
      std::copy(layouts[i][e].begin(), layouts[i][e].end(),
                ranks[i].local.begin() + static_cast<std::ptrdiff_t>(4 * e));
    }
  }
  all_gather_words(ranks);
  const auto& g = ranks[0].gathered;
  int const n = ranks[0].comm->size();
  for (std::uint64_t e = 0; e < max_entries; ++e) {
    Entry reference{};
    std::copy_n(g.begin() + static_cast<std::ptrdiff_t>(4 * e), 4, reference.begin());
    for (int k = 1; k < n; ++k) {
      Entry other{};
      std::copy_n(g.begin() + static_cast<std::ptrdiff_t>(
                                  static_cast<std::size_t>(k) * max_entries * 4 + 4 * e),
                  4, other.begin());
      if (other != reference) {
        std::ostringstream os;
        os << "symmcomm: ranks are not symmetric: entry " << e << " is " << describe(reference)
           << " on rank 0 but " << describe(other) << " on rank " << k
           << " (allocate, reserve and free in the same order on every rank)";
        throw SymmetryError(os.str());
      }
    }
  }
  throw SymmetryError("symmcomm: ranks' layout digests differ but no entry does (hash collision?)");
}

void verify_symmetric(const Communicator& comm, cudaStream_t stream) {
  verify_symmetric(std::vector<const Communicator*>{&comm}, std::vector<cudaStream_t>{stream});
}

}  // namespace symmcomm
