# cmake -DAMAX_SOURCE_DIR=... -DWORK=... -P check.cmake: configures hip_missing where no ROCm can be
# found and checks that the configure step fails naming the missing header and library.
file(REMOVE_RECURSE ${WORK})
execute_process(
  COMMAND ${CMAKE_COMMAND} -S ${CMAKE_CURRENT_LIST_DIR} -B ${WORK} -DAMAX_SOURCE_DIR=${AMAX_SOURCE_DIR}
          -DROCM_PATH=/nonexistent/rocm "-DCMAKE_IGNORE_PREFIX_PATH=/usr;/usr/local;/;/opt/rocm"
          -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
string(REGEX REPLACE "[ \t\r\n]+" " " text "${out} ${err}")
if(rc EQUAL 0)
  message(FATAL_ERROR "configure with AMAX_WITH_HIP=ON and no ROCm succeeded:\n${out}${err}")
endif()
set(expected "AMAX_WITH_HIP=ON but ROCm is incomplete or absent: missing the header hip/hiprtc.h; the HIP runtime library libamdhip64; looked in ROCM_PATH/CMake packages (/nonexistent/rocm;/opt/rocm)")
string(FIND "${text}" "${expected}" at)
if(at EQUAL -1)
  message(FATAL_ERROR "the configure error does not name what is missing; expected\n  ${expected}\ngot\n${text}")
endif()
message(STATUS "configure failed as expected: ${expected}")
