// memory/residency.h — where an offloaded tensor lives, as a checked state machine.
//
// Model (Caffe's SyncedMemory head, extended with in-flight states): a tensor is absent, then on
// the device; offloading (a device->host copy in flight, owning its event); on the host (device
// copy released); prefetching (host->device copy in flight, owning its event); on the device again;
// absent after its last use. A streamed weight (inference) starts on the host instead: its host
// copy is the weight, prefetched for its layer and absent from the device after. Any other transition is a bug in the
// Program or the executor and fails loudly (vdnn::InternalError).
//
//   Residency r("conv1:out");
//   r.to(Residency::kDevice);
//   r.to(Residency::kOffloading, copy_event);
//   r.to(Residency::kHost);             // only once the copy is known to be done
#pragma once

#include <string>

#include "device/device.h"
#include "vdnn/error.h"

namespace vdnn {

class Residency {
 public:
  enum State { kAbsent, kDevice, kOffloading, kHost, kPrefetching };

  explicit Residency(std::string name = {}) : name_(std::move(name)) {}

  State state() const { return state_; }
  // A tensor whose only copy to begin with is on the host (a streamed weight).
  void start_on_host() {
    VDNN_CHECK(state_ == kAbsent, "tensor '" << name_ << "': starts on the host, but is " << name(state_));
    state_ = kHost;
  }
  const Event& event() const { return event_; }

  void to(State next, Event event = {}) {
    VDNN_CHECK(allowed(state_, next),
               "tensor '" << name_ << "': illegal residency transition " << name(state_) << " -> " << name(next));
    state_ = next;
    event_ = std::move(event);
  }

  static const char* name(State s) {
    static const char* names[] = {"absent", "device", "offloading", "host", "prefetching"};
    return names[s];
  }

 private:
  static bool allowed(State from, State to) {
    switch (from) {
      case kAbsent:
        return to == kDevice;
      case kDevice:
        return to == kOffloading || to == kAbsent;
      case kOffloading:
        return to == kHost;
      case kHost:
        return to == kPrefetching;
      case kPrefetching:
        return to == kDevice;
    }
    return false;
  }

  std::string name_;
  State state_ = kAbsent;
  Event event_;
};

}  // namespace vdnn
