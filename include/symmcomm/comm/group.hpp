#pragma once
/// @file group.hpp
/// @brief symmcomm::Group: an NCCL group (ncclGroupStart/End) that also defers symmcomm's own
/// follow-up work until NCCL has completed the grouped calls.
///
/// One thread that drives several communicators must issue their collective calls inside one
/// group, or the first call waits forever for ranks that the same thread has not reached yet.
/// symmcomm's collective constructors and destructors (SymmetricBuffer, SymmAllocator::reserve,
/// collectives) may be placed inside a Group: registrations complete, and memory is freed after
/// deregistration, when the outermost Group ends.
///
/// ```
/// {
///   symmcomm::Group group;
///   for (auto& comm : comms) buffers.emplace_back(comm, bytes);
/// }  // windows are registered here
/// ```

#include <functional>

namespace symmcomm {

/// @brief RAII NCCL group with deferred completion work. Nestable; not movable.
class Group {
 public:
  /// @brief ncclGroupStart. @throws NcclError
  Group();
  /// @brief ncclGroupEnd, then the deferred work in order. Errors are logged (destructors do not
  /// throw); call end() to see them as exceptions.
  ~Group();
  Group(const Group&) = delete;
  Group& operator=(const Group&) = delete;

  /// @brief Ends the group now. @throws NcclError (the deferred work still runs).
  void end();

  /// @brief True while the calling thread is inside a symmcomm::Group.
  static bool active() noexcept;
  /// @brief Runs `work` after the outermost group ends, or now when no group is active.
  static void defer(std::function<void()> work);

 private:
  bool ended_ = false;
};

}  // namespace symmcomm
