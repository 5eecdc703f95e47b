"""Stand-in that hides PyTorch from the sanitizer run (.ci/sanitize.sh): torch's own leaks
and its size under ASan would drown the report; tests that need torch skip. It raises
ModuleNotFoundError, which pytest.importorskip treats as "not installed"."""
raise ModuleNotFoundError("No module named 'torch' (hidden in the sanitizer run)", name="torch")
