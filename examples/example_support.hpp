#pragma once
// Shared by the examples: run a function on one thread per rank, each with its GPU current.

#include <cuda_runtime_api.h>

#include <cstdio>
#include <exception>
#include <functional>
#include <thread>
#include <vector>

#include <symmcomm/symmcomm.hpp>

/// Exit code the examples use when the machine has no GPU (CTest reports it as skipped).
constexpr int kNoGpuExitCode = 77;

inline bool have_gpu() {
  int n = 0;
  return cudaGetDeviceCount(&n) == cudaSuccess && n > 0;
}

/// Runs body(i) for i in [0, n) on n threads at once; rethrows the first failure.
inline void on_threads(std::size_t n, const std::function<void(std::size_t)>& body) {
  std::vector<std::thread> threads;
  std::vector<std::exception_ptr> errors(n);
  for (std::size_t i = 0; i < n; ++i) {
    threads.emplace_back([&, i] {
      try {
        body(i);
      } catch (...) {
        errors[i] = std::current_exception();
      }
    });
  }
  for (auto& t : threads) t.join();
  for (auto& e : errors) {
    if (e) std::rethrow_exception(e);
  }
}

inline void for_each_rank(std::vector<symmcomm::Communicator>& comms,
                          const std::function<void(symmcomm::Communicator&)>& body) {
  on_threads(comms.size(), [&](std::size_t r) {
    cudaSetDevice(comms[r].device());
    body(comms[r]);
  });
}
