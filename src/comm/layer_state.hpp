#pragma once
// Private: what the layers above the communicator keep per communicator, as the comm layer sees
// it. The comm layer makes it with the communicator, lets it take part in the creation's
// agreement (its switches) and in the collective steps after the device communicator exists,
// and releases it in the communicator's teardown order; what it holds (the collectives' scratch
// window, their workspace, their switches) stays the collectives' own (collectives/scratch.hpp
// defines it and the two functions below).

#include <cstdint>
#include <memory>

namespace symmcomm {
struct CommState;
}  // namespace symmcomm

namespace symmcomm::detail {

class LayerState {
 public:
  virtual ~LayerState() = default;
  /// Collective, on every rank in the same order, once the device communicator was made
  /// (CommState::dev_comm) or failed to be: `agreed` holds the switch bits (layer_switches) set
  /// on every rank, so a variable set on some ranks only cannot split them. May allocate and
  /// register symmetric windows; throws where that fails.
  virtual void on_probed(CommState& state, std::uint32_t agreed) = 0;
  /// Whether a kernel may still touch memory of this layer that peers write or read (the
  /// teardown then waits for the communicator's last use before releasing it).
  virtual bool holds_peer_memory() const noexcept = 0;
  /// Releases the layer's windows: `deregister` where the NCCL communicator lives on (a borrowed
  /// one), else the memory only (after ncclCommDestroy released the windows, or when NCCL's side
  /// is gone). Not called where the teardown leaves them allocated for graphs or kernels that
  /// may still use them; the destructor never frees windows.
  virtual void release_windows(CommState& state, bool deregister) noexcept = 0;
};

/// This rank's switches of the layers above (one bit each), from the environment; the
/// creation's all-gather ANDs them over every rank before LayerState::on_probed.
std::uint32_t layer_switches() noexcept;

/// The layers' state of a communicator on `device`, made by CommState's constructor.
std::shared_ptr<LayerState> make_layer_state(int device);

}  // namespace symmcomm::detail
