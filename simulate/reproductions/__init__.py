"""Registry of the paper reproductions that `stallscope reproduce NAME` runs.

Each entry names a function returning a ReproductionResult: rows of the simulator's numbers beside
the paper's, and the tolerance verdict. Other modules add entries here (additive edits).
"""

from __future__ import annotations

import importlib
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable


@dataclass
class ReproductionResult:
    name: str
    title: str
    rows: list[dict[str, Any]]
    passed: bool
    verdict: str  # one line: what was held to which tolerance, and the count
    details: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Reproduction:
    name: str
    title: str
    target: str  # "module:function" under stallscope.simulate.reproductions, imported on use
    slow: bool = False

    def load(self) -> Callable[..., ReproductionResult]:
        module, func = self.target.split(":")
        return getattr(importlib.import_module(f"{__name__}.{module}"), func)

    def run(self, **kwargs: Any) -> ReproductionResult:
        return self.load()(**kwargs)


def reference_dir() -> Path:
    """The published tables: $STALLSCOPE_REFERENCE, else shared/reference beside the checkout (found
    from this file, or from the current directory for a regular install run from the repository
    root), else ../shared/reference from the current directory."""
    env = os.environ.get("STALLSCOPE_REFERENCE")
    if env:
        return Path(env)
    here = Path(__file__).resolve()
    cwd = Path.cwd().resolve()
    for parent in (*here.parents, cwd, *cwd.parents):
        candidate = parent.parent / "shared" / "reference"
        if candidate.is_dir():
            return candidate
    return cwd.parent / "shared" / "reference"


REPRODUCTIONS: dict[str, Reproduction] = {
    r.name: r
    for r in (
        Reproduction("moldeklev-table1", "Moldeklev & Gunningberg table 1: SunOS 4.1.1 over ATM, Nagle on",
                     "moldeklev:table1"),
        Reproduction("moldeklev-table2", "Moldeklev & Gunningberg table 2: Nagle on and off",
                     "moldeklev:table2", slow=True),
        Reproduction("moldeklev-appendix-a", "Moldeklev appendix A: S=16k R=32k settles into 8192 bytes per 200 ms",
                     "moldeklev:appendix_a"),
        Reproduction("salamon", "Salamon: Linux 2.0.29 TCP_NODELAY tail held when message = receive window",
                     "salamon:salamon"),
        Reproduction("kung-morris", "Kung & Morris: TCP over an ATM switch port, no discard / PPD / EPD",
                     "kung_morris:kung_morris"),
        Reproduction("gigatcp", "Shalunov GigaTCP: jumbo receive slots 384 vs 8192, cloned-route MSS",
                     "gigatcp:gigatcp", slow=True),
        Reproduction("mogul-table4", "Mogul & Minshall table 4: naglemark scores per Nagle variant, Ethernet",
                     "mogul:table4", slow=True),
        Reproduction("mogul-table5", "Mogul & Minshall table 5: naglemark scores per Nagle variant, FDDI",
                     "mogul:table5", slow=True),
        Reproduction("mogul-table6", "Mogul & Minshall table 6: naglemark scores, Ethernet, receiver inferring the "
                     "sender's buffer (mean and SD over repetitions)", "mogul:table6", slow=True),
        Reproduction("mogul-table7", "Mogul & Minshall table 7: naglemark scores, FDDI, receiver inferring the "
                     "sender's buffer (mean and SD over repetitions)", "mogul:table7", slow=True),
        Reproduction("mogul-fddi-8192", "Mogul §9: FDDI with 8192-byte buffers, one tick-released burst per 200 ms",
                     "mogul:fddi_8192"),
        Reproduction("mogul-of-sfs", "Mogul §3.3 table 1: share of responses vulnerable to OF+SFS",
                     "mogul:of_sfs_table1"),
    )
}
