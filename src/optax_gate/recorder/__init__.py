"""The recorder of the team's own run (``gate --run CMD``): runs *inside* the environment under test (it imports
jax and optax), switched on without any change to the team's command.

How it does its job and why: ``docs/module-notes.md``."""

#: Environment variable naming the folder of the trace files (``trace-<pid>.jsonl``, JSON lines); unset: the recorder is
#: off.
TRACE_ENV = "OPTAX_GATE_TRACE"
#: Environment variable naming the team's folder: only calls made from files under it are recorded.
ROOT_ENV = "OPTAX_GATE_TEAM_ROOT"
#: Environment variable that, set to ``0``, switches the equation-by-equation replays off (the gate's repeat run).
REPLAY_ENV = "OPTAX_GATE_REPLAY"
#: Version of the trace format (the first line of every trace: ``{"trace": VERSION, ...}``).
VERSION = 1
