"""The recorder of the team's own run (``gate --run CMD``): runs *inside* the
environment under test (it imports jax and optax), switched on without any
change to the team's command.

How it is switched on: the gate runs ``CMD`` with the folder ``site/`` beside
this file first on ``PYTHONPATH``; its ``sitecustomize.py`` (which Python
imports at start-up) installs :func:`optax_gate.recorder.hook.install` when
``OPTAX_GATE_TRACE`` names a folder for the traces, and otherwise does nothing. The hook
waits for ``optax`` (and ``flax.nnx``, ``jax``) to be imported, then wraps their public
callables (:mod:`optax_gate.recorder.calls`) and transformations
(:mod:`optax_gate.recorder.transforms`) and the GradientTransformations
they return, and writes one JSON line per call made from the team's files
(``OPTAX_GATE_TEAM_ROOT``) into its process's trace file (``trace-<pid>.jsonl``). Values are stored per leaf by
:mod:`optax_gate.recorder.values` (dtype, shape, little-endian bytes of at most
:data:`optax_gate.recorder.values.CAP_ELEMENTS` elements, SHA-256 of all).

The gate half reads these traces without numpy (``optax_gate.gate.team_run.divergence``).
"""

#: Environment variable naming the folder of the trace files (``trace-<pid>.jsonl``, JSON lines); unset: the recorder is off.
TRACE_ENV = "OPTAX_GATE_TRACE"
#: Environment variable naming the team's folder: only calls made from files under it are recorded.
ROOT_ENV = "OPTAX_GATE_TEAM_ROOT"
#: Environment variable that, set to ``0``, switches the equation-by-equation replays off (the gate's repeat run).
REPLAY_ENV = "OPTAX_GATE_REPLAY"
#: Version of the trace format (the first line of every trace: ``{"trace": VERSION, ...}``).
VERSION = 1
