#pragma once
/// @file symmcomm.hpp
/// @brief Convenience umbrella: includes the public API an application uses. Test and
/// development aids are not part of it: they live in the build tree's symmcomm::testing target
/// (`symmcomm/testing/loopback.hpp`, `symmcomm/testing/fault_injection.hpp`).

#include "symmcomm/collectives/all_gather.hpp"
#include "symmcomm/collectives/device_counts.hpp"
#include "symmcomm/collectives/local_reduce.hpp"
#include "symmcomm/collectives/moe.hpp"
#include "symmcomm/collectives/options.hpp"
#include "symmcomm/collectives/reduce_scatter.hpp"
#include "symmcomm/comm/communicator.hpp"
#include "symmcomm/comm/group.hpp"
#include "symmcomm/comm/wait.hpp"
#include "symmcomm/error.hpp"
#include "symmcomm/formats/bf16.hpp"
#include "symmcomm/formats/codecs.hpp"
#include "symmcomm/formats/e2m1.hpp"
#include "symmcomm/formats/fp8.hpp"
#include "symmcomm/formats/nvfp4.hpp"
#include "symmcomm/formats/scale_layout.hpp"
#include "symmcomm/formats/shards.hpp"
#include "symmcomm/formats/traits.hpp"
#include "symmcomm/formats/views.hpp"
#include "symmcomm/limits.hpp"
#include "symmcomm/logging.hpp"
#include "symmcomm/memory/provenance.hpp"
#include "symmcomm/memory/symm_allocator.hpp"
#include "symmcomm/memory/symmetric_buffer.hpp"
#include "symmcomm/memory/verify.hpp"
#include "symmcomm/path.hpp"
#include "symmcomm/runtime.hpp"
#include "symmcomm/version.hpp"
