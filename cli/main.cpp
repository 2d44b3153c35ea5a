// amax-tune: the command line of the amax autotuner.
#include <iostream>

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include "amax/render.hpp"
#include "commands.hpp"

int main(int argc, char** argv) {
  // The command line owns the default logger: warnings (the database layer's too) go to stderr,
  // so that stdout holds only the requested output (tables, exports, JSON).
  spdlog::set_default_logger(spdlog::stderr_color_mt("amax-tune-cli"));
  CLI::App app{"amax-tune: a code-generating autotuner for amax = max|x| on AMD and NVIDIA GPUs"};
  app.set_version_flag("--version", std::string(amax::generator_version()));
  app.require_subcommand(0, 1);
  amax::cli::add_emit(app);
  amax::cli::add_tune(app);
  amax::cli::add_db_commands(app);
  amax::cli::add_bench(app);
  amax::cli::add_bench_multi(app);
  amax::cli::add_check(app);
  amax::cli::add_bundle(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::RuntimeError& e) {  // a subcommand finished; carries its exit code
    return e.get_exit_code();
  } catch (const CLI::Success& e) {  // --help, --help-all, --version
    return app.exit(e);
  } catch (const CLI::ParseError& e) {  // bad arguments: one format and exit code for all of them
    std::cerr << "amax-tune: error: " << e.what() << " (see amax-tune --help)\n";
    return amax::cli::kExitUsage;
  } catch (const amax::cli::UsageError& e) {
    std::cerr << "amax-tune: error: " << e.what() << "\n";
    return amax::cli::kExitUsage;
  } catch (const std::exception& e) {
    std::cerr << "amax-tune: error: " << e.what() << "\n";
    return amax::cli::kExitFailed;
  }
  return 0;
}
