// amax-tune tuning database: umbrella header.
#pragma once

#include <amax/db/error.hpp>
#include <amax/db/family.hpp>
#include <amax/db/field.hpp>
#include <amax/db/group.hpp>
#include <amax/db/key.hpp>
#include <amax/db/merge.hpp>
#include <amax/db/nearest.hpp>
#include <amax/db/provenance.hpp>
#include <amax/db/trial.hpp>
#include <amax/db/tuning_db.hpp>
#include <amax/db/winner.hpp>
