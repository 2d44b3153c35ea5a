#pragma once
// The field descriptor that every kernel family's config lists its members with (KernelConfig,
// MultiConfig): from one such list per family derive its label, label parsing, the rendered
// #defines and the compile-time/launch-time split (generator/src/label_codec.hpp).
#include <string_view>

namespace amax {

/// Descriptor of one field of a variant config `Config`: its name, the label prefix and suffix of
/// its token, the kernels' preprocessor name it is compiled in as (empty: a launch parameter, not
/// compiled in), the member it reads, and whether the label leaves it out at its default value (an
/// omissible field; only at the end of the list; when several are, each is written or left out on
/// its own, in list order, and their spellings must not overlap so a token names its field).
/// Plain constexpr value type.
template <class Config, class M>
struct VariantField {
  std::string_view name;
  std::string_view prefix;
  std::string_view suffix;
  std::string_view macro;
  M Config::*member;
  bool omitted_at_default = false;
  constexpr bool compile_time() const noexcept { return !macro.empty(); }
};

}  // namespace amax
