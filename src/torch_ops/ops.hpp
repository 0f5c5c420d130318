// Private to libsymmcomm_torch.so (and its CPU registration check): the operators'
// implementations added to a torch::Library, whatever its namespace and dispatch key.
#pragma once

namespace torch {
class Library;
}

namespace symmcomm::torch_ops {

/// Adds every operator of ops.cpp (SYMMCOMM_TORCH_OPERATORS) to `lib`; throws the dispatcher's
/// error when an operator's C++ signature does not match its schema.
void implement(torch::Library& lib);

}  // namespace symmcomm::torch_ops
