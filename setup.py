"""Build the compiled core ``loopcore._core`` (Cython).

Directives are set once, here.  Environment toggles:

* ``LOOPCORE_DEBUG=1``  -- bounds/wraparound/initialized checks on, ``-O0 -g``.
* ``LOOPCORE_ANNOTATE=1`` -- write ``src/loopcore/_core.html``.
* ``LOOPCORE_REQUIRE_EXTENSION=1`` -- fail the install when the extension does
  not build (otherwise the pure-Python reference is used, with a warning).
"""

import os

from Cython.Build import cythonize
from setuptools import Extension, setup

DEBUG = os.environ.get("LOOPCORE_DEBUG") == "1"
REQUIRE = os.environ.get("LOOPCORE_REQUIRE_EXTENSION") == "1"

DIRECTIVES = {
    "language_level": 3,
    "boundscheck": DEBUG,
    "wraparound": DEBUG,
    "initializedcheck": DEBUG,
    "cdivision": True,
    "embedsignature": True,
}

compile_args = ["-O0", "-g", "-UNDEBUG"] if DEBUG else ["-O3"]

extensions = [
    Extension(
        "loopcore._core",
        ["src/loopcore/_core.pyx"],
        extra_compile_args=compile_args,
        optional=not REQUIRE,
    )
]

setup(
    ext_modules=cythonize(
        extensions,
        compiler_directives=DIRECTIVES,
        annotate=os.environ.get("LOOPCORE_ANNOTATE") == "1",
    )
)
