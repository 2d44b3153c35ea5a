#pragma once
// A simulated device for CPU tests of the timing runner's decisions (measure.hpp run_batches,
// runner.hpp Runner): one stream whose work runs only when the host waits for it, kernels of given
// GPU times, events that read the simulated clock, and timing gates that poll the real mapped host
// words the Gate writes. A gate the simulated GPU reaches before the host released it times out
// (its words[1] set), as the real gate does once its timeout passes; a test may also make chosen
// gates time out. It records what the host did, in order (op_log), every launch the host enqueued
// behind a gate it had already released (violations) and the most work ever queued at once.
// Device memory is addresses only (nothing is read or written). Not thread-safe (tests only).
#include <cstdint>
#include <algorithm>
#include <cstdlib>
#include <stdexcept>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "unused_backend.hpp"

namespace amax::test {

class SimBackend : public UnusedBackend {
 public:
  /// The gate kernel's handle: launches of it are gates (their first argument points at the words).
  static FunctionHandle gate_function() { return reinterpret_cast<FunctionHandle>(0x6a7e); }
  /// A kernel handle of its own (`id` > 0) that takes `us` microseconds of GPU time per launch.
  FunctionHandle kernel(int id, double us) {
    const auto f = reinterpret_cast<FunctionHandle>(static_cast<std::uintptr_t>(0x10000 + id));
    kernel_us[f] = us;
    kernel_id_[f] = id;
    return f;
  }

  SimBackend() : UnusedBackend("SimBackend") {
    info_.name = "Simulated GPU";
    info_.arch = "sm_90";
    info_.l2_bytes = 0;
    info_.cu_count = 132;
  }
  ~SimBackend() override {
    for (void* p : mapped_) std::free(p);
  }

  Vendor vendor() const noexcept override { return Vendor::nvidia; }
  void* allocate(std::size_t bytes) override {
    void* p = reinterpret_cast<void*>(next_address_);
    next_address_ += (bytes + 0xfffff) / 0x100000 * 0x100000 + 0x100000;
    return p;
  }
  void copy_to_device(void*, const void*, std::size_t) override {}
  MappedHost allocate_mapped_host(std::size_t bytes) override {
    void* p = std::calloc(1, bytes);
    mapped_.push_back(p);
    return {p, p};
  }
  StreamHandle create_stream() override { return reinterpret_cast<StreamHandle>(0x5); }
  EventHandle create_event() override {
    ++events_created;
    return reinterpret_cast<EventHandle>(static_cast<std::uintptr_t>(next_event_++));
  }
  void destroy_event(EventHandle) noexcept override { ++events_destroyed; }

  void launch(FunctionHandle f, std::uint32_t, std::uint32_t, StreamHandle, void** args) override {
    if (f == gate_function()) {
      auto* words = *static_cast<unsigned**>(args[0]);
      queue_.push_back({Op::gate, words, 0, nullptr});
      op_log.push_back("gate " + std::to_string(gate_slot(words)));
      ++gates_launched;
    } else {
      const auto it = kernel_us.find(f);
      if (it == kernel_us.end()) throw std::logic_error("SimBackend: launch of an unknown kernel");
      check_gate("launch");
      queue_.push_back({Op::kernel, nullptr, it->second, nullptr});
      if (log_launches) op_log.push_back("call " + std::to_string(kernel_id_[f]));
      ++launches;
    }
    max_queued = std::max(max_queued, queue_.size() - done_);
  }
  void record(EventHandle e, StreamHandle) override {
    check_gate("record");
    queue_.push_back({Op::record, nullptr, 0, e});
    op_log.push_back("record");
    max_queued = std::max(max_queued, queue_.size() - done_);
  }
  float elapsed_ms(EventHandle start, EventHandle stop) override {
    op_log.push_back("wait");
    run_until_recorded(stop);
    return static_cast<float>((time_[stop] - time_[start]) / 1000.0);
  }
  void synchronize(StreamHandle) override {
    op_log.push_back("sync");
    run(queue_.size());
  }

  /// Gates (by launch order, from 0) that time out whenever the host releases them.
  std::set<int> time_out_gates;
  std::map<FunctionHandle, double> kernel_us;
  bool log_launches = true;
  std::vector<std::string> op_log;
  std::vector<std::string> violations;
  std::size_t max_queued = 0;
  int launches = 0, gates_launched = 0, events_created = 0, events_destroyed = 0;

 private:
  struct Op {
    enum Kind { gate, kernel, record } kind;
    unsigned* words;
    double us;
    EventHandle event;
  };
  // The gate's slot, from its words' address: slot s polls words 2s and 2s + 1 of one allocation.
  int gate_slot(const unsigned* words) const {
    for (void* p : mapped_)
      if (words >= static_cast<unsigned*>(p) && words < static_cast<unsigned*>(p) + 64)
        return static_cast<int>((words - static_cast<unsigned*>(p)) / 2);
    return -1;
  }
  // Work enqueued behind a gate the host already released would run as the host enqueues it.
  void check_gate(const char* what) {
    for (std::size_t i = queue_.size(); i-- > done_;)
      if (queue_[i].kind == Op::gate) {
        if (queue_[i].words[0] != 0)
          violations.push_back(std::string(what) + " enqueued behind a released gate (op " + std::to_string(i) + ")");
        return;
      }
  }
  void run_until_recorded(EventHandle e) {
    std::size_t last = queue_.size();
    for (std::size_t i = queue_.size(); i-- > 0;)
      if (queue_[i].kind == Op::record && queue_[i].event == e) {
        last = i + 1;
        break;
      }
    run(last);
  }
  void run(std::size_t until) {
    for (; done_ < until; ++done_) {
      Op& op = queue_[done_];
      if (op.kind == Op::gate) {
        const int ordinal = gate_ordinal_++;
        if (op.words[0] == 0 || time_out_gates.count(ordinal)) op.words[1] = 1u;
      } else if (op.kind == Op::kernel) {
        clock_us_ += op.us;
      } else {
        time_[op.event] = clock_us_;
      }
    }
  }

  std::vector<void*> mapped_;
  std::uintptr_t next_address_ = 0x7f0000000000;
  std::uintptr_t next_event_ = 0x1000;
  std::vector<Op> queue_;
  std::size_t done_ = 0;
  int gate_ordinal_ = 0;
  double clock_us_ = 0;
  std::map<EventHandle, double> time_;
  std::map<FunctionHandle, int> kernel_id_;
};

}  // namespace amax::test
