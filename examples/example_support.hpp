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

inline void for_each_rank(std::vector<symmcomm::Communicator>& comms,
                          const std::function<void(symmcomm::Communicator&)>& body) {
  std::vector<std::thread> threads;
  std::vector<std::exception_ptr> errors(comms.size());
  for (std::size_t r = 0; r < comms.size(); ++r) {
    threads.emplace_back([&, r] {
      try {
        cudaSetDevice(comms[r].device());
        body(comms[r]);
      } catch (...) {
        errors[r] = std::current_exception();
      }
    });
  }
  for (auto& t : threads) t.join();
  for (auto& e : errors) {
    if (e) std::rethrow_exception(e);
  }
}
