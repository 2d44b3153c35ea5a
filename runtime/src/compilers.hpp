#pragma once
#include <memory>

#include "amax/compiler.hpp"

namespace amax::detail {
/// Adds one to jit_compile_count(); each compiler calls it when it starts a compile.
void count_compile() noexcept;
#if AMAX_HAVE_CUDA
std::unique_ptr<JitCompiler> make_nvrtc_compiler();
#endif
#if AMAX_HAVE_HIP
std::unique_ptr<JitCompiler> make_hiprtc_compiler();
#endif
}  // namespace amax::detail
