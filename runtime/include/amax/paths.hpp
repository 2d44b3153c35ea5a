#pragma once
// Default locations of the databases; one place for the tuner and the runtime library.
#include <filesystem>

namespace amax {

/// The per-user tuning database: $AMAX_TUNE_DB, else $XDG_DATA_HOME/amax-tune/tuning.db, else
/// $HOME/.local/share/amax-tune/tuning.db, else ./amax-tune.db. Thread-safe.
std::filesystem::path default_user_db_path();

/// The pre-tuned system database: $AMAX_TUNE_SYSTEM_DB, else share/amax-tune/system.db of the
/// installation this library belongs to (found from the library's own location, so relocated
/// installs work), else the configured install prefix's. The file may not exist. Thread-safe.
std::filesystem::path default_system_db_path();

}  // namespace amax
