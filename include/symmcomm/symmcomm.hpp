#pragma once
/// @file symmcomm.hpp
/// @brief Convenience umbrella: includes every public symmcomm header.

#include "symmcomm/comm/communicator.hpp"
#include "symmcomm/comm/group.hpp"
#include "symmcomm/error.hpp"
#include "symmcomm/formats/bf16.hpp"
#include "symmcomm/formats/codecs.hpp"
#include "symmcomm/formats/e2m1.hpp"
#include "symmcomm/formats/fp8.hpp"
#include "symmcomm/formats/nvfp4.hpp"
#include "symmcomm/formats/traits.hpp"
#include "symmcomm/formats/views.hpp"
#include "symmcomm/logging.hpp"
#include "symmcomm/memory/arena_allocator.hpp"
#include "symmcomm/memory/provenance.hpp"
#include "symmcomm/memory/symm_allocator.hpp"
#include "symmcomm/memory/symmetric_buffer.hpp"
#include "symmcomm/memory/verify.hpp"
#include "symmcomm/runtime.hpp"
#include "symmcomm/version.hpp"
