"""Corner grids per API family: the inputs just beside the sweep's one representative call, and each cell's outcome in
one short line (``docs/module-notes.md``)."""
