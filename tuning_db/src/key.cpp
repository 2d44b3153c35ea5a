#include <amax/db/error.hpp>
#include <amax/db/key.hpp>

namespace amax::db {

std::string_view to_string(Dtype dtype) noexcept {
  switch (dtype) {
    case Dtype::fp32: return "fp32";
    case Dtype::fp16: return "fp16";
    case Dtype::bf16: return "bf16";
  }
  return "invalid";
}

std::optional<Dtype> parse_dtype(std::string_view text) noexcept {
  for (Dtype d : {Dtype::fp32, Dtype::fp16, Dtype::bf16}) {
    if (text == to_string(d)) return d;
  }
  return std::nullopt;
}

Dtype dtype_from_string(std::string_view text) {
  if (auto d = parse_dtype(text)) return *d;
  throw DbError(ErrorKind::InvalidArgument,
                "unknown dtype '" + std::string(text) + "' (expected fp32, fp16 or bf16)");
}

std::string to_string(const TuningKey& key) {
  return key.arch + "/" + std::string(to_string(key.dtype)) + "/n=" + std::to_string(key.n);
}

}  // namespace amax::db
