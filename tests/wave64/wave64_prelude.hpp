#pragma once
// templates/prelude_wave64.h, embedded into the wave-64 model library at build time
// (cmake/embed_templates.cmake): the model's prelude is no part of the generator.
#include <array>
#include <string_view>

namespace amax::wave64::detail {
/// One embedded template file.
struct TemplateFile {
  std::string_view name;  ///< file name under templates/
  std::string_view text;
};
extern const std::array<TemplateFile, 1> kTemplates;  ///< {prelude_wave64.h}
}  // namespace amax::wave64::detail
