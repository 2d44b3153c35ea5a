#include "test_util.hpp"
