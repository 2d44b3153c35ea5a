"""A fixture of check_history_refs.py: Issue #12 in a docstring."""
x = "issue 12 in a string is not a comment"
y = 1  # December 2026-12 (a month)
