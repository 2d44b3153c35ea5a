/* A compiler library that aborts inside its compile call, as ROCm 5.2's comgr does for a processor
   it does not know (`munmap_chunk(): invalid pointer`), in NVRTC's shape so that the CLI test can
   point AMAX_TUNE_NVRTC_LIBRARY at it: `amax-tune bundle` must report the crash as a failed run
   (exit 1) and leave no output. Every other call succeeds; the version is 13.0. */
#include <stdlib.h>

typedef int nvrtcResult; /* NVRTC_SUCCESS = 0 */
typedef void* nvrtcProgram;

nvrtcResult nvrtcVersion(int* major, int* minor) {
  *major = 13;
  *minor = 0;
  return 0;
}
const char* nvrtcGetErrorString(nvrtcResult r) { return r ? "error" : "NVRTC_SUCCESS"; }
nvrtcResult nvrtcCreateProgram(nvrtcProgram* p, const char* src, const char* name, int n, const char* const* h,
                               const char* const* i) {
  (void)src, (void)name, (void)n, (void)h, (void)i;
  *p = (void*)1;
  return 0;
}
nvrtcResult nvrtcDestroyProgram(nvrtcProgram* p) {
  *p = 0;
  return 0;
}
nvrtcResult nvrtcCompileProgram(nvrtcProgram p, int n, const char* const* opts) {
  (void)p, (void)n, (void)opts;
  abort();
}
nvrtcResult nvrtcGetProgramLogSize(nvrtcProgram p, size_t* s) {
  (void)p;
  *s = 1;
  return 0;
}
nvrtcResult nvrtcGetProgramLog(nvrtcProgram p, char* log) {
  (void)p;
  *log = 0;
  return 0;
}
nvrtcResult nvrtcGetCUBINSize(nvrtcProgram p, size_t* s) {
  (void)p;
  *s = 0;
  return 0;
}
nvrtcResult nvrtcGetCUBIN(nvrtcProgram p, char* c) {
  (void)p, (void)c;
  return 0;
}
