// amax-tune tuning database: multi-tensor results. A group key is a group shape (tensor count,
// total bytes, largest tensor) of one arch and dtype; its trials and winner are Trial and Winner
// rows of the multi-tensor kernel family (labels "multi.t512.v8.u4.c32k.warp").
#pragma once

#include <amax/db/field.hpp>
#include <amax/db/key.hpp>
#include <amax/db/provenance.hpp>
#include <amax/db/trial.hpp>
#include <amax/db/winner.hpp>

#include <cstdint>
#include <string>
#include <tuple>

namespace amax::db {

/// What a multi-tensor tuning result is for: one architecture, one element type, one group
/// shape. The database keeps at most one group key per (arch, dtype, group_bucket() of the shape,
/// provenance identity): recording a shape replaces the rows of the same identity whose shape
/// falls in the same bucket (nearest.hpp).
///
/// Rules checked when written (DbError InvalidArgument naming the value otherwise): arch
/// non-empty; tensors >= 1; largest_bytes >= 1; largest_bytes <= total_bytes <= tensors *
/// largest_bytes; every count <= 2^63-1 (SQLite integers are signed 64-bit).
///
/// Thread-safety: plain value type.
struct GroupKey {
  /// GPU architecture as a target ID: "sm_90", "gfx942:sramecc+:xnack-". Non-empty.
  std::string arch;
  /// Element type of every tensor of the group.
  DType dtype = DType::fp32;
  /// Number of tensors in the group.
  std::uint64_t tensors = 0;
  /// Bytes of all tensors together.
  std::uint64_t total_bytes = 0;
  /// Bytes of the largest tensor.
  std::uint64_t largest_bytes = 0;

  friend bool operator==(const GroupKey&, const GroupKey&) = default;
  /// Orders by arch, then dtype name, then tensors, total_bytes, largest_bytes: the order of SQL
  /// ORDER BY arch, dtype, tensors, total_bytes, largest_bytes, used by every listing.
  friend bool operator<(const GroupKey& a, const GroupKey& b) {
    if (a.arch != b.arch) return a.arch < b.arch;
    if (a.dtype != b.dtype) return to_string(a.dtype) < to_string(b.dtype);
    return std::tie(a.tensors, a.total_bytes, a.largest_bytes) < std::tie(b.tensors, b.total_bytes, b.largest_bytes);
  }
};

/// The fields of GroupKey, listed once. SQL columns have no prefix. The tables of group rows exist
/// since schema 4, so every field is there from the start.
inline constexpr std::tuple group_key_fields{
    Field<GroupKey, std::string>{"arch", &GroupKey::arch, "GPU target ID, e.g. sm_90 or gfx942:sramecc+:xnack-"},
    Field<GroupKey, DType>{"dtype", &GroupKey::dtype, "element type of every tensor: fp32, fp16 or bf16"},
    Field<GroupKey, std::uint64_t>{"tensors", &GroupKey::tensors, "number of tensors (1 .. 2^63-1)"},
    Field<GroupKey, std::uint64_t>{"total_bytes", &GroupKey::total_bytes, "bytes of all tensors"},
    Field<GroupKey, std::uint64_t>{"largest_bytes", &GroupKey::largest_bytes, "bytes of the largest tensor"},
};
static_assert(aggregate_arity<GroupKey>() == std::tuple_size_v<decltype(group_key_fields)>,
              "every GroupKey member must be listed in group_key_fields");

/// "sm_90/bf16/4096 tensors, 128 MiB, largest 32 KiB", for messages: byte counts in the largest
/// binary unit (B, KiB, MiB, GiB, TiB, PiB, EiB) that holds them exactly ("1536 B" stays bytes).
/// Thread-safe.
[[nodiscard]] std::string to_string(const GroupKey& key);

/// A stored multi-tensor trial: group key, measurement and provenance.
///
/// Thread-safety: plain value type.
struct GroupTrialRow {
  GroupKey key;
  Trial trial;
  Provenance provenance;

  friend bool operator==(const GroupTrialRow&, const GroupTrialRow&) = default;
};

/// A stored multi-tensor winner: group key, choice and provenance. There is at most one per
/// arch, dtype, bucket of the key and provenance identity.
///
/// Thread-safety: plain value type.
struct GroupWinnerRow {
  GroupKey key;
  Winner winner;
  Provenance provenance;

  friend bool operator==(const GroupWinnerRow&, const GroupWinnerRow&) = default;
};

}  // namespace amax::db
