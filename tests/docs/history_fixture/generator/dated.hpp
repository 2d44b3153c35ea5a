// A fixture of check_history_refs.py: 5 findings below, and what it must not flag.
// Measured on 2026-12-02 (a date).
/* as issue 27 asked (an issue number) */
const char* s = "2026-12-02 in a string is not a comment";
const char* t = R"(// 2026-12-02 in a raw string)";
int x = 1;  // the best of run 3 (a run number)
// docs/results/2026-12-02-gpu-time.md is a path; 2031-01-15T02:51:00Z a timestamp; 3 calls, 15 rounds
