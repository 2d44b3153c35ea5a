/* The C header compiles as C and links with the flags pkg-config gives. */
#include <amax/amax_tune.h>
#include <stdio.h>

int main(void) {
  amax_context_options_t o;
  amax_context_t c = NULL;
  amax_context_options_init(&o);
  amax_status_t s = amax_context_create(&o, &c);
  printf("amax-tune %s from C: %s %s\n", amax_version(), amax_status_string(s), amax_last_error());
  amax_context_destroy(c);
  return s == AMAX_STATUS_SUCCESS || s == AMAX_STATUS_NO_DEVICE ? 0 : 1;
}
