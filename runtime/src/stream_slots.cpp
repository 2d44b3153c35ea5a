// The stream slots (shared by a context's siblings): slot_words zeroed words of the context's device
// memory per stream (the words the strategies' rows name, launch_plan.hpp), claimed lock-free by
// open addressing.
#include <cstdint>
#include <functional>
#include <thread>

#include <fmt/format.h>

#include "context.hpp"

using namespace amax;
using namespace amax::capi;

std::uint32_t* ContextState::slot_for(StreamHandle s) {
  // Key: the stream handle (+1, so that the legacy stream NULL is a key too). The per-thread
  // default stream (cudaStreamPerThread / hipStreamPerThread, handle 2) is another stream in
  // every thread: keyed by the thread, with low bits 11 that no handle + 1 has.
  std::uintptr_t key = reinterpret_cast<std::uintptr_t>(s) + 1;
  if (reinterpret_cast<std::uintptr_t>(s) == 2)
    key = (static_cast<std::uintptr_t>(std::hash<std::thread::id>{}(std::this_thread::get_id())) << 2) | 3u;
  std::size_t i = (key * 0x9e3779b97f4a7c15ull) >> 52;  // 12 bits: 4096 slots
  for (std::size_t probe = 0; probe < kSlots; ++probe, i = (i + 1) % kSlots) {
    std::uintptr_t cur = slot_keys[i].load(std::memory_order_acquire);
    if (cur == key) return slots.get<std::uint32_t>() + slot_words * i;
    if (cur == 0 && slot_keys[i].compare_exchange_strong(cur, key, std::memory_order_acq_rel))
      return slots.get<std::uint32_t>() + slot_words * i;
    if (cur == key) return slots.get<std::uint32_t>() + slot_words * i;
  }
  fail(AMAX_STATUS_TOO_MANY_STREAMS, fmt::format("more than {} distinct streams used kernels with a stream slot of "
                                                 "this context and its siblings; create another context", kSlots));
}
