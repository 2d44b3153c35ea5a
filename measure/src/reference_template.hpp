#pragma once
// templates/bench_kernels.h, embedded into amax_measure at build time (cmake/embed_templates.cmake).
#include <array>
#include <string_view>

namespace amax::tune::detail {
/// One embedded template file.
struct TemplateFile {
  std::string_view name;  ///< file name under templates/
  std::string_view text;
};
extern const std::array<TemplateFile, 1> kTemplates;  ///< {bench_kernels.h}
}  // namespace amax::tune::detail
