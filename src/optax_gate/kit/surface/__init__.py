"""The whole public surface's generated contracts: how to build and call each public callable (``table``, ``calls``,
``enumeration``, ``generated``), run it through the protocol (``build``, ``probe``), and its edges, derivatives,
wrappers and shardings (``edges``, ``derivatives``, ``wrapped``, ``sharded``); and which public callables each
constructor is built from (``composition``, run by the gate's ``--usage`` attribution)."""
