"""Training set-ups the contracts share: ``models`` (the small Flax NNX model), ``resume`` (checkpoints written in one
environment, restored and continued in another) and ``multidevice`` (meshes over the simulated devices)."""
