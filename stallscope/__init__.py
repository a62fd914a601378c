"""stallscope: why a TCP connection was slow, from its packet capture."""

import os as _os
import sys as _sys

__version__ = "0.1.0"

# The package is assembled at install time from several folders of the checkout (analyzers/,
# capture/, simulate/, ...); this folder holds only the CLI's part. Run from the checkout's root,
# `python -m stallscope.analyzers.corpus` finds this folder first (the working directory leads
# sys.path) and none of the rest: hand over to an installed package's folder where there is one.
# (An editable install maps the other folders itself and leaves no such folder on sys.path.)
_here = _os.path.dirname(_os.path.realpath(__file__))
if not _os.path.isdir(_os.path.join(_here, "analyzers")):
    for _entry in _sys.path:
        _cand = _os.path.join(_entry or _os.getcwd(), "stallscope")
        if (_os.path.realpath(_cand) != _here
                and _os.path.isfile(_os.path.join(_cand, "analyzers", "__init__.py"))):
            __path__[:] = [_cand]
            break
