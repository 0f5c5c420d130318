// The figures of a scenario run over several cycles (-N): per row, the median and min-max over
// the cycles, the way results are quoted (never the best cycle).
#pragma once

#include <string>
#include <vector>

#include "config.hpp"

namespace symmcomm::bench {

/// The summary table of `rows` (every cycle's rows of a moe-dp or moe-a2a run): per tokens per
/// rank and path, in first-seen order, the median (min-max) over cycles of dispatch, combine and
/// their sum, then the sum's median over each other path's of the same tokens where `reference`
/// names a path that ran ("" for none). Empty when `rows` hold fewer than 2 cycles.
std::string moe_summary(const std::vector<MoeResult>& rows, const std::string& reference);

}  // namespace symmcomm::bench
