#pragma once
// No silent skips: every test program of symmcomm lists its skipped tests with their reasons
// when it ends, and with SYMMCOMM_ALLOWED_SKIPS set ('|'-separated texts, e.g. "GPUs, this
// machine has|this machine has a GPU") a skip whose reason contains none of them is
// unexpected: the program exits non-zero naming it. The GPU scripts set the variable to the
// few reasons a run may skip for by design; a skip of anything a run is meant to cover fails it.
// CTest marks a gtest skip as skipped whatever the exit code: scripts/ctest_skips.sh applies
// the same list to a ctest run.

namespace symmcomm::test {

/// Unexpected skips so far in this program (0 without SYMMCOMM_ALLOWED_SKIPS).
int unexpected_skips();

/// By default the program ends with exit code 1 after its last test when a skip was unexpected;
/// a main that combines results itself (the multi-rank tier's, over MPI) turns that off and
/// adds unexpected_skips() to its verdict.
void exit_on_unexpected_skips(bool exit);

}  // namespace symmcomm::test
