"""``python -m loopguard``: the ``loopguard`` command (:func:`loopguard.cli.main`)."""

from loopguard.cli import main

if __name__ == "__main__":
    raise SystemExit(main())
