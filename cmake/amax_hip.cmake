# Finds the HIP runtime and hipRTC for the HIP backend, for ROCm 5.x and 6.x layouts.
#   In:  AMAX_WITH_HIP (AUTO|ON), ROCM_PATH (CMake variable or environment; default /opt/rocm),
#        CMAKE_PREFIX_PATH (honoured by every find_* call below).
#   Out: AMAX_HAVE_HIP (ON when usable), the INTERFACE target amax_hip (headers, the HIP runtime
#        library, __HIP_PLATFORM_AMD__), AMAX_HIP_VERSION (of the headers, "5.2.21153"),
#        AMAX_ROCM_HINTS (where ROCm was looked for, for LLVM too), AMAX_HIPRTC_FOUND_IN (the
#        hipRTC library found at configure time, for the status line only).
# Layouts: ROCm 6.x installs the CMake packages `hip` (hip::host) and `hiprtc` (hiprtc::hiprtc,
# libhiprtc.so.6); ROCm 5.x (Debian 12's 5.2, Debian 13's 5.7) may lack them and keeps hipRTC
# inside libamdhip64. hipRTC is never linked: the runtime opens it with dlopen on first use
# (runtime/src/hiprtc_compiler.cpp), so only its header is needed to build; where no hipRTC library
# is found the status line says so (compiles then fail at run time naming what was tried).
# With AMAX_WITH_HIP=ON a missing piece stops the configure step naming it and where it was looked for.
set(AMAX_ROCM_HINTS)
if(DEFINED ROCM_PATH)
  list(APPEND AMAX_ROCM_HINTS ${ROCM_PATH})
elseif(DEFINED ENV{ROCM_PATH})
  list(APPEND AMAX_ROCM_HINTS $ENV{ROCM_PATH})
endif()
list(APPEND AMAX_ROCM_HINTS /opt/rocm)

set(_amax_hip_missing "")
find_package(hip CONFIG QUIET HINTS ${AMAX_ROCM_HINTS})
find_package(hiprtc CONFIG QUIET HINTS ${AMAX_ROCM_HINTS})

find_path(AMAX_HIPRTC_INCLUDE hip/hiprtc.h HINTS ${AMAX_ROCM_HINTS} PATH_SUFFIXES include)
find_library(AMAX_AMDHIP64 amdhip64 HINTS ${AMAX_ROCM_HINTS} PATH_SUFFIXES lib lib64)
if(TARGET hiprtc::hiprtc)
  set(_amax_hiprtc_lib hiprtc::hiprtc)
else()
  # ROCm 5.3+ from AMD's packages ships libhiprtc without a CMake package in some releases.
  find_library(AMAX_HIPRTC_LIB hiprtc HINTS ${AMAX_ROCM_HINTS} PATH_SUFFIXES lib lib64)
  set(_amax_hiprtc_lib ${AMAX_HIPRTC_LIB})
  if(NOT AMAX_HIPRTC_LIB)
    set(_amax_hiprtc_lib "")
  endif()
endif()
if(NOT AMAX_HIPRTC_INCLUDE)
  string(APPEND _amax_hip_missing " the header hip/hiprtc.h;")
endif()
if(NOT AMAX_AMDHIP64 AND NOT TARGET hip::host)
  string(APPEND _amax_hip_missing " the HIP runtime library libamdhip64;")
endif()

if(_amax_hip_missing STREQUAL "")
  # The HIP runtime's entry points must link (hip_backend.cpp); hipRTC's are only declared here.
  include(CheckCXXSourceCompiles)
  include(CMakePushCheckState)
  cmake_push_check_state(RESET)
  set(CMAKE_REQUIRED_QUIET ON)
  set(CMAKE_REQUIRED_DEFINITIONS -D__HIP_PLATFORM_AMD__)
  set(CMAKE_REQUIRED_INCLUDES ${AMAX_HIPRTC_INCLUDE})
  if(TARGET hip::host)
    set(CMAKE_REQUIRED_LIBRARIES hip::host)
  else()
    set(CMAKE_REQUIRED_LIBRARIES ${AMAX_AMDHIP64})
  endif()
  check_cxx_source_compiles([[
#include <hip/hip_runtime_api.h>
#include <hip/hiprtc.h>
int main() {
  hipDeviceProp_t prop{};
  hiprtcResult r = HIPRTC_SUCCESS;
  return hipGetDeviceProperties(&prop, 0) == hipSuccess && r == HIPRTC_SUCCESS;
}]] AMAX_HIP_LINKS)
  cmake_pop_check_state()
  if(NOT AMAX_HIP_LINKS)
    string(APPEND _amax_hip_missing
           " a HIP runtime that links (hipGetDeviceProperties from hip::host or ${AMAX_AMDHIP64} with hip/hip_runtime_api.h);")
  endif()
endif()

if(_amax_hip_missing STREQUAL "")
  set(AMAX_HAVE_HIP ON)
  # AMAX_HIP_VERSION: major.minor.patch of the headers (hip/hip_version.h).
  file(STRINGS ${AMAX_HIPRTC_INCLUDE}/hip/hip_version.h _amax_hip_v REGEX "#define HIP_VERSION_(MAJOR|MINOR|PATCH) ")
  string(REGEX REPLACE ".*MAJOR ([0-9]+).*MINOR ([0-9]+).*PATCH ([0-9]+).*" "\\1.\\2.\\3" AMAX_HIP_VERSION "${_amax_hip_v}")
  add_library(amax_hip INTERFACE)
  target_compile_definitions(amax_hip INTERFACE __HIP_PLATFORM_AMD__)
  target_include_directories(amax_hip SYSTEM INTERFACE ${AMAX_HIPRTC_INCLUDE})
  if(TARGET hip::host)
    target_link_libraries(amax_hip INTERFACE hip::host)
    set(_amax_hip_how "CMake packages hip ${hip_VERSION}")
    if(TARGET hiprtc::hiprtc)
      string(APPEND _amax_hip_how " and hiprtc ${hiprtc_VERSION}")
    endif()
  else()
    target_link_libraries(amax_hip INTERFACE ${AMAX_AMDHIP64})
    set(_amax_hip_how "${AMAX_AMDHIP64}")
  endif()
  if(_amax_hiprtc_lib)
    set(AMAX_HIPRTC_FOUND_IN ${_amax_hiprtc_lib})
    if(TARGET ${_amax_hiprtc_lib})
      get_target_property(_amax_hiprtc_loc ${_amax_hiprtc_lib} LOCATION)
      if(_amax_hiprtc_loc)
        set(AMAX_HIPRTC_FOUND_IN ${_amax_hiprtc_loc})
      endif()
    endif()
    string(APPEND _amax_hip_how ", hipRTC in ${AMAX_HIPRTC_FOUND_IN}, opened with dlopen at run time")
  else()
    set(AMAX_HIPRTC_FOUND_IN ${AMAX_AMDHIP64})
    string(APPEND _amax_hip_how ", no libhiprtc: hipRTC expected inside libamdhip64 (ROCm 5), opened with dlopen at run time")
  endif()
  message(STATUS "amax-tune: HIP backend ON: HIP ${AMAX_HIP_VERSION} (${_amax_hip_how}; headers ${AMAX_HIPRTC_INCLUDE})")
elseif(AMAX_WITH_HIP STREQUAL "ON")
  message(FATAL_ERROR "AMAX_WITH_HIP=ON but ROCm is incomplete or absent: missing${_amax_hip_missing} "
                      "looked in ROCM_PATH/CMake packages (${AMAX_ROCM_HINTS}), CMAKE_PREFIX_PATH and "
                      "the system paths. Install ROCm (or Debian's libamdhip64-dev), or point ROCM_PATH "
                      "at it, or configure with -DAMAX_WITH_HIP=OFF.")
else()
  message(STATUS "amax-tune: HIP backend OFF (missing${_amax_hip_missing} looked in ${AMAX_ROCM_HINTS} and the system)")
endif()
unset(_amax_hip_missing)
