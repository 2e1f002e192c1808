"""Build the compiled core ``loopcore._core`` and its result scans ``loopcore._scan`` (Cython).

Directives are set once, here.  Environment toggles:

* ``LOOPCORE_DEBUG=1``  -- bounds/wraparound/initialized checks on, ``-O0 -g``.
* ``LOOPCORE_ASAN=1``  -- AddressSanitizer (``-fsanitize=address``); run Python with
  ``LD_PRELOAD=$(gcc -print-file-name=libasan.so) ASAN_OPTIONS=detect_leaks=0``.
* ``LOOPCORE_ANNOTATE=1`` -- write ``src/loopcore/_core.html``.
* ``LOOPCORE_REQUIRE_EXTENSION=1`` -- fail the install when the extension does
  not build (otherwise the pure-Python reference is used, with a warning).

The generated C goes to ``build/cython`` (release) or ``build/cython-debug`` (``LOOPCORE_DEBUG=1``),
never beside the ``.pyx``: Cython regenerates a ``.c`` only when it is older than its ``.pyx``, so
one shared file would let a debug build compile the release C (no bounds checks) or the reverse.
A debug or ASan build also recompiles every extension (``build_ext --force``), since an extension
built with other flags would otherwise count as up to date.
"""

import os
import sys

from Cython.Build import cythonize
from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

DEBUG = os.environ.get("LOOPCORE_DEBUG") == "1"
REQUIRE = os.environ.get("LOOPCORE_REQUIRE_EXTENSION") == "1"
ASAN = os.environ.get("LOOPCORE_ASAN") == "1"
CYTHON_BUILD_DIR = os.path.join("build", "cython-debug" if DEBUG else "cython")

DIRECTIVES = {
    "language_level": 3,
    "boundscheck": DEBUG,
    "wraparound": DEBUG,
    "initializedcheck": DEBUG,
    "cdivision": True,
    "embedsignature": True,
}

compile_args = ["-O0", "-g", "-UNDEBUG"] if DEBUG else ["-O3"]
link_args: list[str] = []
if ASAN:
    compile_args += ["-fsanitize=address", "-fno-omit-frame-pointer"]
    link_args += ["-fsanitize=address"]

#: The compiled modules: the stream core's owner, its kernels (one module per detector, plus the
#: buffer, the counting table, fences and records; ``src/loopcore/_kernels``), the result scans.
KERNELS = ("buffer", "table", "fences", "records", "exact", "lowdiv", "cycle", "pool", "near", "salad")
MODULES = ["loopcore._core", "loopcore._scan"] + [f"loopcore._kernels.{name}" for name in KERNELS]

extensions = [
    Extension(
        module,
        ["src/" + module.replace(".", "/") + ".pyx"],
        extra_compile_args=compile_args,
        extra_link_args=link_args,
        optional=not REQUIRE,
    )
    for module in MODULES
]


class OptionalBuildExt(build_ext):
    """Build ``loopcore._core`` and ``loopcore._scan``; without a working C compiler, warn and
    install the reference.

    setuptools' own ``optional=True`` misses some failures (no ``gcc`` at all raises
    ``OSError``), so every error is caught here unless ``LOOPCORE_REQUIRE_EXTENSION=1``.
    """

    def finalize_options(self) -> None:
        # Cythonized here, when something is built, not each time setup.py runs (sdist, egg_info);
        # before setuptools' own finalize_options, which prepares the extensions it is given.
        self.distribution.ext_modules = cythonize(
            self.distribution.ext_modules,
            include_path=["src"],
            build_dir=CYTHON_BUILD_DIR,
            compiler_directives=DIRECTIVES,
            annotate=os.environ.get("LOOPCORE_ANNOTATE") == "1",
        )
        super().finalize_options()
        if DEBUG or ASAN:  # objects built with other flags must not count as up to date
            self.force = True

    def run(self) -> None:
        try:
            super().run()
        except Exception as exc:
            self._fallback(exc)

    def build_extension(self, ext: Extension) -> None:
        try:
            super().build_extension(ext)
        except Exception as exc:
            self._fallback(exc)

    _warned = False

    @classmethod
    def _fallback(cls, exc: BaseException) -> None:
        if REQUIRE:
            raise exc
        if not cls._warned:  # once: every extension fails the same way without a compiler
            cls._warned = True
            print(
                f"WARNING: loopcore's extensions were not built ({exc}); loopguard will use the slow "
                "pure-Python reference. Install a C compiler and reinstall for the compiled core.",
                file=sys.stderr,
            )


setup(cmdclass={"build_ext": OptionalBuildExt}, ext_modules=extensions)
