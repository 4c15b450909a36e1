"""Stage 0, what every stage shares: atomic writes, a failure and its numbers in plain words, the report's data shapes,
progress lines on the console.

Its modules: ``docs/architecture.md``. May import: nothing else of the gate."""
