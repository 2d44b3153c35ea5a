#include <amax/db/provenance.hpp>

#include "util.hpp"

namespace amax::db {

bool operator==(const Provenance& a, const Provenance& b) {
  return fields_equal(a, b, provenance_fields);
}

namespace {
template <class Pred>
std::vector<std::string_view> differing(const Provenance& a, const Provenance& b, Pred pred) {
  std::vector<std::string_view> out;
  for_each_field(provenance_fields, [&](const auto& field) {
    if (pred(field) && !(field.get(a) == field.get(b))) out.push_back(field.name);
  });
  return out;
}

bool equal_with_role(const Provenance& a, const Provenance& b, FieldRole role) noexcept {
  bool eq = true;
  for_each_field(provenance_fields, [&](const auto& field) {
    if (field.has(role) && !(field.get(a) == field.get(b))) eq = false;
  });
  return eq;
}
}  // namespace

std::vector<std::string_view> stale_fields(const Provenance& row, const Provenance& current) {
  return differing(row, current, [](const auto& field) { return field.has(kStale); });
}

std::vector<std::string_view> differing_fields(const Provenance& a, const Provenance& b) {
  return differing(a, b, [](const auto&) { return true; });
}

bool same_identity(const Provenance& a, const Provenance& b) noexcept {
  return equal_with_role(a, b, kIdentity);
}

bool same_device(const Provenance& a, const Provenance& b) noexcept {
  return equal_with_role(a, b, kDevice);
}

std::string describe_device(const Provenance& p) {
  return "'" + p.device_name + "' (" + p.arch + ", " + std::to_string(p.cu_count) + " CUs)";
}

std::string utc_timestamp_now() { return detail::utc_stamp("%Y-%m-%dT%H:%M:%SZ"); }

}  // namespace amax::db
