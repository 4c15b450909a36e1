"""Independent float64 NumPy references of the contracted APIs, each written from its published formula: ``core`` (the
guides' APIs and what every reference shares), ``optimizers``, ``schedules``, ``losses``, ``wrappers``."""
