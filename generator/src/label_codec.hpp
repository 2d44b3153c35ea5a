#pragma once
// The label codec shared by every kernel family (KernelConfig, MultiConfig): a config's canonical
// label, its parsing, its compile-time #defines and its compile-time part, all derived from the
// family's field list (Config::fields(), VariantField descriptors). One spelling per field type:
// the value codecs below.
#include <stdexcept>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>

#include "amax/kernel_config.hpp"
#include "amax/multi_config.hpp"

namespace amax::detail {

// ---- per-type token codecs: the label spelling and #define value of each field type ----
// An enum field (Strategy, Epilogue, Combine) is spelt by its table's name and compiled in as its
// table's macro (enum_table(E) finds the table).
template <class E>
  requires std::is_enum_v<E>
std::string format_value(E e) {
  return std::string(enum_name(enum_table(e), e));
}
template <class E>
  requires std::is_enum_v<E>
bool parse_value(std::string_view s, E& out) {
  const auto v = enum_parse(enum_table(E{}), s);
  if (v) out = *v;
  return v.has_value();
}
template <class E>
  requires std::is_enum_v<E>
std::string define_value(E e) {
  return std::string(enum_table(e)[static_cast<std::size_t>(e)].macro);
}
std::string format_value(std::uint32_t v);
std::string format_value(const BlockCap& b);
bool parse_value(std::string_view s, std::uint32_t& out);
bool parse_value(std::string_view s, BlockCap& out);
std::string define_value(std::uint32_t v);  // the number's digits
std::string define_value(const BlockCap&);  // launch-time only: never rendered

/// How a family's labels are written: the family tag that leads every label (empty for the
/// single-tensor family), what the error messages call a label, and the pattern they show.
struct LabelSyntax {
  std::string_view family;
  std::string_view what;     ///< "variant label", "multi-tensor variant label"
  std::string_view pattern;  ///< e.g. "strategy.tT.vN.uU.bB[.scale], e.g. two_stage.t256.v8.u4.b8cu"
};

template <class Config>
constexpr std::size_t field_count() { return std::tuple_size_v<decltype(Config::fields())>; }

/// Fields the label always has (the omissible ones come last, checked here at compile time).
template <class Config>
constexpr std::size_t required_field_count() {
  std::size_t n = 0;
  bool seen_omissible = false, ordered = true;
  std::apply(
      [&](const auto&... f) {
        ((ordered = ordered && (f.omitted_at_default || !seen_omissible),
          seen_omissible = seen_omissible || f.omitted_at_default, n += f.omitted_at_default ? 0 : 1),
         ...);
      },
      Config::fields());
  if (!ordered) throw "omissible fields must come last in fields()";  // a compile error in constexpr use
  return n;
}

/// The label: the family tag (if any), then every field's token in order, '.'-separated;
/// omissible fields at their default are left out, and with `compile_time_only` so are the
/// launch-time fields (the kernel label).
template <class Config>
std::string make_label(const Config& c, std::string_view family, bool compile_time_only) {
  static const Config defaults{};
  std::string out(family);
  std::apply(
      [&](const auto&... f) {
        ((void)((compile_time_only && !f.compile_time()) ||
                        (f.omitted_at_default && c.*(f.member) == defaults.*(f.member))
                    ? 0
                    : (out += (out.empty() ? "" : "."), out += f.prefix, out += format_value(c.*(f.member)),
                       out += f.suffix, 0)),
         ...);
      },
      Config::fields());
  return out;
}

/// Parses a full label of `syntax`. Errors: std::invalid_argument naming the label and the bad
/// token (or the token count and the expected pattern). The result is syntactically valid only.
template <class Config>
Config parse_label(std::string_view label, const LabelSyntax& syntax) {
  constexpr std::size_t kFields = field_count<Config>(), kRequired = required_field_count<Config>();
  const std::size_t tag = syntax.family.empty() ? 0 : 1;
  const auto parts = split(label, '.');
  const auto fail = [&](const std::string& why) {
    return std::invalid_argument("invalid " + std::string(syntax.what) + " '" + std::string(label) + "': " + why);
  };
  if (parts.size() < kRequired + tag || parts.size() > kFields + tag || (tag && parts[0] != syntax.family))
    throw fail("expected " + std::to_string(kRequired + tag) + " to " + std::to_string(kFields + tag) +
               " '.'-separated fields (" + std::string(syntax.pattern) + "), got " + std::to_string(parts.size()));
  const Config defaults{};
  Config c;
  std::size_t i = tag;
  std::string first_bad;  // the first refusal of an omissible field, and the token it refused
  std::size_t first_bad_at = 0;
  std::apply(
      [&](const auto&... f) {
        (
            [&] {
              if (i == parts.size()) return;  // an omitted (omissible) field keeps its default
              const std::string_view tok = parts[i];
              if (tok.size() < f.prefix.size() + f.suffix.size() || !tok.starts_with(f.prefix) ||
                  !tok.ends_with(f.suffix) ||
                  !parse_value(tok.substr(f.prefix.size(), tok.size() - f.prefix.size() - f.suffix.size()),
                               c.*(f.member))) {
                const std::string why = "bad " + std::string(f.name) + " field '" + std::string(tok) + "'";
                if (!f.omitted_at_default) throw fail(why);
                // An omissible field may be left out while a later one is written: the token is
                // offered to the next field, this one keeps its default.
                if (first_bad.empty()) first_bad = why, first_bad_at = i;
                return;
              }
              ++i;
              if (f.omitted_at_default && c.*(f.member) == defaults.*(f.member))
                throw fail("the " + std::string(f.name) + " field '" + std::string(tok) +
                           "' is the default and is written by leaving it out");
            }(),
            ...);
      },
      Config::fields());
  if (i != parts.size()) {  // a token no field took: misspelt, or omissible fields out of order
    if (!first_bad.empty() && first_bad_at == i) throw fail(first_bad);
    throw fail("unexpected field '" + std::string(parts[i]) + "' after the last field it could be (" +
               std::string(syntax.pattern) + ")");
  }
  return c;
}

/// `c` with every launch-time field (no macro) at its default: the part that decides the binary.
template <class Config>
Config compile_time_part(const Config& c) {
  Config out = c;
  const Config defaults{};
  std::apply([&](const auto&... f) { ((f.compile_time() ? void() : void(out.*(f.member) = defaults.*(f.member))), ...); },
             Config::fields());
  return out;
}

/// `#define MACRO value` for every compile-time field, in field order.
template <class Config>
std::string compile_time_defines(const Config& c) {
  std::string out;
  std::apply(
      [&](const auto&... f) {
        ((f.compile_time() ? void(out += "#define " + std::string(f.macro) + " " + define_value(c.*(f.member)) + "\n")
                           : void()),
         ...);
      },
      Config::fields());
  return out;
}

}  // namespace amax::detail
