#pragma once
// Owning handles of memory a Backend allocates: DeviceBuffer (Backend::allocate / release) and
// MappedHostBuffer (Backend::allocate_mapped_host / release_mapped_host). Move-only RAII: the
// memory is released when the owner is destroyed or assigned over, also on the way out of an
// exception. The backend must outlive the buffers it allocated. Thread-safety: as a plain value
// (one owner at a time; the memory itself may be used from any thread).
#include <cstddef>
#include <utility>

#include "amax/backend.hpp"

namespace amax {

/// `bytes` bytes of device memory of `backend`, released on destruction. Errors: what
/// Backend::allocate throws (BackendError when out of memory).
class DeviceBuffer {
 public:
  DeviceBuffer() noexcept = default;
  DeviceBuffer(Backend& backend, std::size_t bytes) : b_(&backend), p_(backend.allocate(bytes)), bytes_(bytes) {}
  DeviceBuffer(DeviceBuffer&& o) noexcept
      : b_(std::exchange(o.b_, nullptr)), p_(std::exchange(o.p_, nullptr)), bytes_(std::exchange(o.bytes_, 0)) {}
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept {
    if (this != &o) {
      reset();
      b_ = std::exchange(o.b_, nullptr);
      p_ = std::exchange(o.p_, nullptr);
      bytes_ = std::exchange(o.bytes_, 0);
    }
    return *this;
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  ~DeviceBuffer() { reset(); }

  /// Releases the memory now (nothing when empty).
  void reset() noexcept {
    if (b_ && p_) b_->release(p_);
    b_ = nullptr;
    p_ = nullptr;
    bytes_ = 0;
  }

  /// The device address, as `T*`, `byte_offset` bytes in; nullptr (for offset 0) when empty.
  template <class T = void>
  T* get(std::size_t byte_offset = 0) const noexcept {
    return reinterpret_cast<T*>(static_cast<char*>(p_) + byte_offset);
  }
  std::size_t bytes() const noexcept { return bytes_; }
  explicit operator bool() const noexcept { return p_ != nullptr; }

 private:
  Backend* b_ = nullptr;
  void* p_ = nullptr;
  std::size_t bytes_ = 0;
};

/// `bytes` bytes of page-locked host memory mapped into the device (Backend::MappedHost),
/// released on destruction. Errors: what Backend::allocate_mapped_host throws.
class MappedHostBuffer {
 public:
  MappedHostBuffer() noexcept = default;
  MappedHostBuffer(Backend& backend, std::size_t bytes) : b_(&backend), m_(backend.allocate_mapped_host(bytes)) {}
  MappedHostBuffer(MappedHostBuffer&& o) noexcept
      : b_(std::exchange(o.b_, nullptr)), m_(std::exchange(o.m_, Backend::MappedHost{})) {}
  MappedHostBuffer& operator=(MappedHostBuffer&& o) noexcept {
    if (this != &o) {
      reset();
      b_ = std::exchange(o.b_, nullptr);
      m_ = std::exchange(o.m_, Backend::MappedHost{});
    }
    return *this;
  }
  MappedHostBuffer(const MappedHostBuffer&) = delete;
  MappedHostBuffer& operator=(const MappedHostBuffer&) = delete;
  ~MappedHostBuffer() { reset(); }

  void reset() noexcept {
    if (b_ && m_.host) b_->release_mapped_host(m_.host);
    b_ = nullptr;
    m_ = {};
  }

  void* host() const noexcept { return m_.host; }      ///< the host's pointer
  void* device() const noexcept { return m_.device; }  ///< the address kernels use for the same bytes

 private:
  Backend* b_ = nullptr;
  Backend::MappedHost m_;
};

}  // namespace amax
