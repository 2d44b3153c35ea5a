# ctest script: the SQLite file the build made from a text dump dumps back to the same text.
#   cmake -DTOOL=<amax-tune> -DDB=<built.db> -DTEXT=<dump.jsonl> -DOUT=<scratch.jsonl> -P text_roundtrip.cmake
execute_process(COMMAND "${TOOL}" show --db "${DB}" --integrity RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "amax-tune show --db ${DB} --integrity failed (${rc}): ${out}${err}")
endif()
execute_process(COMMAND "${TOOL}" export --db "${DB}" --format text -o "${OUT}" RESULT_VARIABLE rc ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "amax-tune export --db ${DB} --format text failed (${rc}): ${err}")
endif()
execute_process(COMMAND "${CMAKE_COMMAND}" -E compare_files "${TEXT}" "${OUT}" RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "${DB} does not dump back to ${TEXT} (see ${OUT})")
endif()
