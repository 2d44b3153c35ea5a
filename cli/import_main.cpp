// amax-tune-import DUMP DB: builds the tuning database DB from the text dump DUMP, as `amax-tune
// import DUMP -o DB` does (the same code: dump_import.cpp), without the tuner, the bench and the
// rest of the command line. The build makes the shipped system.db with it (amax_tuning_db_from_text),
// so a build of the library and the Python package alone does not compile those.
// Exit codes: 0 done, 1 a bad dump or a database error (named on stderr), 2 bad arguments.
#include <exception>
#include <iostream>
#include <string>

#include "dump_import.hpp"

int main(int argc, char** argv) {
  if (argc != 3 || std::string(argv[1]).empty() || std::string(argv[2]).empty()) {
    std::cerr << "usage: amax-tune-import DUMP.jsonl DB (builds DB, replacing it, from the text dump)\n";
    return 2;
  }
  try {
    amax::cli::import_dump(argv[1], argv[2], std::cout);
  } catch (const std::exception& e) {
    std::cerr << "amax-tune-import: error: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
