#pragma once
// A Backend for CPU tests of the code above it (kernel cache, launch sequence): every method throws
// std::logic_error ("<what>: unexpected call") unless a test's subclass overrides it; release,
// destroy and memory_device (noexcept) do nothing or return -1. device() returns the DeviceInfo the
// subclass fills in. Not thread-safe (tests only).
#include <stdexcept>
#include <string>

#include "amax/backend.hpp"

namespace amax::test {

class UnusedBackend : public Backend {
 public:
  /// `what` names the test backend in the errors of the methods it does not expect.
  explicit UnusedBackend(std::string what) : what_(std::move(what)) {}
  const DeviceInfo& device() const noexcept override { return info_; }
  std::unique_ptr<Module> load_module(std::span<const char>) override { unused(); }
  void launch(FunctionHandle, std::uint32_t, std::uint32_t, StreamHandle, void**) override { unused(); }
  void memset32_async(void*, std::uint32_t, std::size_t, StreamHandle) override { unused(); }
  void* allocate(std::size_t) override { unused(); }
  void release(void*) noexcept override {}
  MappedHost allocate_mapped_host(std::size_t) override { unused(); }
  void release_mapped_host(void*) noexcept override {}
  void copy_to_device(void*, const void*, std::size_t) override { unused(); }
  void copy_to_host(void*, const void*, std::size_t) override { unused(); }
  StreamOwner stream_owner(StreamHandle) override { unused(); }
  int memory_device(const void*) noexcept override { return -1; }
  StreamHandle create_stream() override { unused(); }
  void destroy_stream(StreamHandle) noexcept override {}
  void synchronize(StreamHandle) override { unused(); }
  bool is_capturing(StreamHandle) override { unused(); }
  EventHandle create_event() override { unused(); }
  void destroy_event(EventHandle) noexcept override {}
  void record(EventHandle, StreamHandle) override { unused(); }
  float elapsed_ms(EventHandle, EventHandle) override { unused(); }
  void begin_capture(StreamHandle) override { unused(); }
  GraphExecHandle end_capture(StreamHandle) override { unused(); }
  void launch_graph(GraphExecHandle, StreamHandle) override { unused(); }
  void destroy_graph(GraphExecHandle) noexcept override {}

 protected:
  [[noreturn]] void unused() const { throw std::logic_error(what_ + ": unexpected call"); }
  DeviceInfo info_;

 private:
  std::string what_;
};

}  // namespace amax::test
