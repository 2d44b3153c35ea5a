#include <amax/db/winner.hpp>

namespace amax::db {

bool operator==(const Winner& a, const Winner& b) { return fields_equal(a, b, winner_fields); }

}  // namespace amax::db
