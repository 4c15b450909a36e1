"""Two small installed packages (a baseline and a candidate site) whose public API differs."""

from __future__ import annotations

from pathlib import Path

BASE_SRC = '''\
"""Private implementation (a folder without __init__.py, like optax/_src)."""


def scale(lr, momentum=0.9, nesterov=False):
    return lr


def clip(tree, max_norm):
    return tree


def swap(a, b):
    return a


def loss(x, y, delta=1.0, axis=-1):
    return x


def posonly(tree, fn):
    return tree


def needs(x):
    return x


def gone(x):
    return x


def mover(x):
    return x


def shape(x):
    return x


class State:
    def __init__(self, count, mu=None):
        self.count = count

    def step(self, grads, lr=0.1):
        return grads
'''


CAND_SRC = '''\
"""Private implementation, candidate version."""


def scale(lr, momentum=0.95, nesterov=False):
    return lr


def clip(tree):
    return tree


def swap(b, a):
    return a


def loss(x, y, *, delta=1.0, axis=-1):
    return x


def posonly(tree, fn, /):
    return tree


def needs(x, y):
    return x


class shape:
    def __init__(self, x):
        self.x = x


def rename(tree, max_norm2):
    return tree


class State:
    def __init__(self, count, mu=None):
        self.count = count

    def step(self, grads, *, lr=0.1):
        return grads


def fresh(x):
    return x
'''


BASE_INIT = """\
from optax import losses
from optax._src.impl import scale, clip, swap, posonly, needs, gone, mover, shape, State
from optax._src.impl import clip as renamed_clip
__all__ = ["scale", "clip", "swap", "posonly", "needs", "gone", "mover", "shape", "State", "renamed_clip"]
"""


CAND_INIT = """\
from optax import losses
from optax import contrib
from optax._src.impl import scale, clip, swap, posonly, needs, shape, State, fresh
from optax._src.impl import rename as renamed_clip
__all__ = ["scale", "clip", "swap", "posonly", "needs", "shape", "State", "renamed_clip", "fresh"]
"""


def build(root: Path, init: str, src: str, contrib: bool) -> Path:
    """An installed-looking tree ``root/optax`` (a site-packages folder)."""
    (root / "optax" / "_src").mkdir(parents=True)
    (root / "optax" / "losses").mkdir()
    (root / "optax" / "__init__.py").write_text(init)
    (root / "optax" / "_src" / "impl.py").write_text(src)
    (root / "optax" / "losses" / "__init__.py").write_text("from optax._src.impl import loss\n")
    if contrib:
        (root / "optax" / "contrib").mkdir()
        (root / "optax" / "contrib" / "__init__.py").write_text("from optax._src.impl import needs as mover\n")
    return root
