"""The help text of the command line: ``python -m optax_gate --help`` and each command's ``--help`` are cut from
:data:`TEXT`."""

#: The commands, their options in words, and the exit statuses (reST double backticks are dropped when shown).
TEXT = """Command line of the gate: ``python -m optax_gate <command>`` (through
``./noxw -s gate``, and ./noxw -s matrix, compare, bisect or rebaseline: a session per command).

Commands:

``gate [SPEC ...]``
    Check the inputs, resolve the candidate (the baseline's requirements with
    the packages named by ``SPEC`` replaced, e.g. ``optax==0.2.8``; with no
    ``SPEC``, the newest releases of optax, jax, jaxlib and flax) or take
    ``--candidate-lock``; a SPEC ``optax @ git+URL@REF``, ``optax @
    file:///CHECKOUT`` or ``--source optax=PATH_OR_URL@REF`` builds optax (or
    flax) from that commit and judges its wheel), then build (or reuse) both
    environments, run the contracts in each, and write the report into a new run folder under
    ``--out``; ``OUT/report.md`` shows the latest run that judged both sides
    (``OUT/not-judged.md`` the newest that did not: refused or stopped early).
    ``--usage PATH`` (repeatable, one path each) scopes the API surface and
    dependency diffs to the team's code and names its call sites on every
    finding; relative paths are read from the folder ``./noxw`` was started
    from; ``--contracts DIR`` (repeatable) runs the team's own contract
    modules from its folder beside ours (a missing or empty folder: exit 2
    before anything is built; one that fails in the baseline: not
    verified, named); ``--fail-on-new-deprecations`` makes a new deprecation
    warning broken. With ``--usage`` the verdict is the team's: a broken
    finding on APIs its code does not reach (or whose every call its literal
    arguments rule out) is listed under "Optax changed elsewhere" and does
    not fail the gate; ``--fail-on all`` lets every finding set the verdict.
    ``--run CMD`` runs the team's own command
    (a few training steps, its tests) in both environments under a recorder
    of its Optax calls, in ``--run-dir`` (default: the current folder): the
    verdict is then about the team's run (docs/team-run.md): FAIL when it
    breaks or diverges, PASS when it does not, whatever Optax changed
    elsewhere.
``matrix [--plan | --only NAME ... | --merge] [--include-older] [--upstream] [--upstream-tests]``
    Discover the releases of optax, jax/jaxlib and flax newer than the
    baseline on the package index (``--upstream``: and optax's and flax's
    default branches, built from source, marked unreleased), run the contracts in the baseline and in
    each candidate environment, and write
    ``report.md``, ``report.json`` and ``report.html`` to ``--out``
    (default ``reports/matrix``). ``--plan`` only prints the environments as
    JSON (for fanning out over CI runners), ``--only`` runs the named ones
    (``baseline`` included) into ``runs/``, ``--merge`` combines ``runs/``
    into the report. ``--upstream-tests``: each candidate environment that
    ran its contracts also cross-runs optax's own shipped tests against the
    baseline's environment; the report shows its counts and findings per
    environment, the verdicts unchanged, and one that cannot run leaves its
    environment not verified. A progress line at least every 25 s (``--heartbeat``)
    while an environment runs. Exit 2 when the baseline did not run; else 0
    once the report is written, or with ``--fail-on broken|changed`` (for
    scheduled jobs): 1 when an environment has a broken contract (or any
    differing one), else 2 when an environment is not verified, else 0.
``compare BASELINE_RUN CANDIDATE_RUN``
    Compare two run records (``evidence/baseline.json`` and
    ``evidence/candidate.json`` of gate runs, e.g. a baseline and a candidate
    run on different machines) and write ``report.md`` and ``report.json`` to
    ``--out`` (default ``reports/compare``; never a gate's output folder, whose
    ``report.md`` shows its newest judged run); ``--usage`` as for ``gate``;
    exit status as the gate's (2 for a file that is not a run record).

``bisect [DIR]``
    For each broken, changed or fixed finding of a complete gate run (DIR: a
    gate output folder or one of its run folders; default reports/gate)
    whose moved package is pure Python (optax, flax), find the first-parent
    commit between the baseline's release tag and the candidate's that
    changed it: each tested commit is built once (cached by SHA) and only the
    finding's contracts run in the candidate's environment with that package
    replaced. ``--history optax=PATH_OR_URL`` says where the history is read
    (default: the public repository). The report is rewritten with
    ``changed by <sha> <subject> (#PR, date)`` under each finding, or "not
    bisected: <why>"; its verdict does not change. ``gate --bisect`` does
    the same once the gate's report is complete. Exit 0 once written, 2 when
    the report or the candidate's environment cannot be used.

``rebaseline LOCK [--move]``
    Run every contract in the environment of LOCK (another baseline: a
    team's optax 0.2.8, say) as a gate runs a team's baseline, and accept
    each contract that fails there into the ledger of moved behaviour
    (tests/contracts/moved_behaviour.toml): at that baseline it then passes
    when it fails as the baseline does and fails when the behaviour moves
    again, so no contract is blind there. ``--move`` also makes LOCK the
    pinned baseline (the lock copied over requirements-lock.txt, the
    snapshot files re-recorded in place). Summary in reports/rebaseline/.
    Exit 0 once the ledger is written, 2 when LOCK is not a hashed lock
    (missing, a folder, unreadable) or pins no optax, its
    environment cannot be built, the run is not verified, or a contract
    could not be accepted (an error outside its call).

Exit status (gate, compare):
  0  pass: no contract broke and no row beyond the contracts is broken
  1  fail: a contract broke (with --usage: one of a finding your code
     reaches; --fail-on all: any), the team's run (--run) breaks or
     diverges, or a broken row beyond the contracts: an API
     surface change that breaks an import or call site of the team's code
     (--usage; without it, a contracted API removed or made incompatible), a
     dependency removed that the team's code imports (--usage), a new
     deprecation warning (--fail-on-new-deprecations), or a training step
     slower than --speed-budget
  2  not verified: a bad input (spec, extra, lock file, output folder), an
     environment that could not be resolved, installed or imported (the
     other side is then not run), pytest crashed or timed out, zero
     contracts ran, a contract went missing, the team's run (--run) fails in
     the baseline or is not deterministic, the run was interrupted, or the
     gate itself failed (a failure after the contracts ran keeps them in the
     report, with the phase named)

Exit status (matrix):
  0  the report was written with a verified baseline (and, with --fail-on,
     no environment met it and every environment was verified)
  1  with --fail-on broken|changed: an environment has a broken contract
     (broken) or any contract that differs (changed)
  2  the baseline was not verified, no plan to merge, an environment name
     not in the plan, or (with --fail-on) an environment not verified
"""
