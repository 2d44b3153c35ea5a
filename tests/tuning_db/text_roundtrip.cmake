# ctest script: the SQLite file the build made from a text dump dumps back to the same text.
#   cmake -DTOOL=<amax-db> -DDB=<built.db> -DTEXT=<dump.jsonl> -DOUT=<scratch.jsonl> -P text_roundtrip.cmake
execute_process(COMMAND "${TOOL}" check "${DB}" RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "amax-db check ${DB} failed (${rc}): ${out}${err}")
endif()
execute_process(COMMAND "${TOOL}" dump "${DB}" "${OUT}" RESULT_VARIABLE rc ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "amax-db dump ${DB} failed (${rc}): ${err}")
endif()
execute_process(COMMAND "${CMAKE_COMMAND}" -E compare_files "${TEXT}" "${OUT}" RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "${DB} does not dump back to ${TEXT} (see ${OUT})")
endif()
