// The device view of a planned call (device_view.hpp).

#include "collectives/device_view.hpp"

#include "collectives/call_prerequisites.hpp"
#include "symmcomm/error.hpp"

namespace symmcomm::detail {

DeviceView::DeviceView(const PlannedCall& planned)
    : planned_(planned), peers_(lsa_peers(planned.state())) {}

lsa::SymRef DeviceView::ref(Slot slot, int index, const char* name) {
  const Provenance& p = planned_.provenance(slot, index);
  for (int s = 0; s < used_; ++s) {
    if (peers_.window[s] == p.window) return lsa::SymRef{s, p.offset};
  }
  SYMMCOMM_EXPECTS(used_ < lsa::kSlots, planned_.operation()
                                            << ": " << name << " is in a " << used_ + 1
                                            << "th window; the LSA kernel reaches at most "
                                            << lsa::kSlots
                                            << " (allocate the buffers from one pool: its arena is "
                                               "one window)");
  peers_.window[used_] = p.window;
  return lsa::SymRef{used_++, p.offset};
}

std::size_t DeviceView::bind(int at, Slot slot, int index) {
  SYMMCOMM_EXPECTS(at >= 0 && at < lsa::kSlots && used_ == 0,
                   planned_.operation() << ": table slot " << at << " (a bug in symmcomm)");
  const Provenance& p = planned_.provenance(slot, index);
  peers_.window[at] = p.window;
  return p.offset;
}

lsa::Peers window_peers(const CommState& comm, ncclWindow_t window) {
  lsa::Peers peers = lsa_peers(comm);
  peers.window[0] = window;
  return peers;
}

}  // namespace symmcomm::detail
