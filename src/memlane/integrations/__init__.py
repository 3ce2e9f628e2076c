"""memlane inside agent frameworks: each module implements one framework's own interface on
top of `memlane.Memory`, behind an extra (`pip install 'memlane[langgraph]'`, …), so the
framework's documented usage works unchanged. Importing this package imports no framework."""
