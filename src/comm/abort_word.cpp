// The pool of abort words (abort_word.hpp): mapped, portable pinned pages carved into words,
// handed out once each.

#include "comm/abort_word.hpp"

#include <cuda_runtime_api.h>

#include <atomic>
#include <cstddef>
#include <mutex>

#include "symmcomm/error.hpp"

namespace symmcomm::detail {
namespace {

constexpr std::size_t kWordsPerPage = 1024;

struct Pool {
  std::mutex mutex;
  std::uint32_t* page = nullptr;  // host address of the current page (mapped, portable)
  std::size_t used = kWordsPerPage;
};

Pool& pool() {
  static Pool* p = new Pool;  // never destroyed: kernels may read words at process exit
  return *p;
}

}  // namespace

AbortWord take_abort_word() {
  Pool& p = pool();
  std::lock_guard lock(p.mutex);
  if (p.used == kWordsPerPage) {
    void* page = nullptr;
    SYMMCOMM_CUDA_TRY(cudaHostAlloc(&page, kWordsPerPage * sizeof(std::uint32_t),
                                    cudaHostAllocMapped | cudaHostAllocPortable));
    p.page = static_cast<std::uint32_t*>(page);
    p.used = 0;
  }
  std::uint32_t* word = p.page + p.used++;
  *static_cast<volatile std::uint32_t*>(word) = 0;
  void* device = nullptr;
  SYMMCOMM_CUDA_TRY(cudaHostGetDevicePointer(&device, word, 0));
  return AbortWord{word, static_cast<const std::uint32_t*>(device)};
}

void raise_abort(const AbortWord& word) noexcept {
  if (word.host == nullptr) return;
  *word.host = 1;
  std::atomic_thread_fence(std::memory_order_seq_cst);
}

}  // namespace symmcomm::detail
