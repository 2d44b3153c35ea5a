#pragma once
#include <array>
#include <initializer_list>
#include <string>
#include <cstddef>
#include <string_view>

namespace amax::detail {
/// One template file embedded at build time (cmake/embed_templates.cmake).
struct TemplateFile {
  std::string_view name;  ///< file name under templates/
  std::string_view text;
};
extern const std::array<TemplateFile, 7> kTemplates;
/// Text of the embedded template `name`; std::logic_error if absent (a build defect).
std::string_view template_text(std::string_view name);
/// FNV-1a 64 (hex) over the names and texts of every embedded template but those in `skip`.
std::string hash_templates(std::initializer_list<std::string_view> skip);
}  // namespace amax::detail
