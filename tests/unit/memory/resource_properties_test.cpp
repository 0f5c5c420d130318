// SymmAllocator declares where its memory can be used, as CCCL's memory resources do: with
// CCCL's experimental memory-resource properties enabled, cuda::has_property sees it as
// device-accessible and not host-accessible. Built as its own program (the opt-in macro must be
// the same in every translation unit that sees the class).

#define LIBCUDACXX_ENABLE_EXPERIMENTAL_MEMORY_RESOURCE

#include <gtest/gtest.h>

#include "symmcomm/memory/symm_allocator.hpp"

#if !defined(SYMMCOMM_HAS_CUDA_MR_PROPERTIES)
#error "<cuda/memory_resource> was not found: this test needs CCCL's headers on the include path"
#endif

namespace {

using symmcomm::SymmAllocator;

static_assert(cuda::has_property<SymmAllocator, cuda::mr::device_accessible>,
              "a symmetric pool's memory is device-accessible");
static_assert(!cuda::has_property<SymmAllocator, cuda::mr::host_accessible>,
              "ncclMemAlloc memory is not host-accessible");
static_assert(SymmAllocator::device_accessible && !SymmAllocator::host_accessible);

TEST(ResourceProperties, PoolIsDeviceAccessibleOnly) {
  EXPECT_TRUE((cuda::has_property<SymmAllocator, cuda::mr::device_accessible>));
  EXPECT_FALSE((cuda::has_property<SymmAllocator, cuda::mr::host_accessible>));
}

}  // namespace
