"""The Nagle variants the simulator models, by name (the rules are in native/src/sim/nagle.rs).

Sources: Mogul & Minshall, "Rethinking the TCP Nagle Algorithm" (CCR 2001), sections 3 and 5 and
table 3; Moldeklev & Gunningberg section 4.2.1 for UNACKED-MSS; Linux TCP_CORK
(docs/tcp-rules.md#linux-nagle-minshall-cork-and-nodelay).
"""

from __future__ import annotations

from enum import Enum


class NagleVariant(str, Enum):
    """Names exactly as in Mogul table 3, plus Moldeklev's change and Linux TCP_CORK."""

    NAGLE = "NAGLE"  # traditional (RFC 896 as in BSD tcp_output), Mogul figure 3
    OFF = "OFF"  # TCP_NODELAY
    MINSHALL = "MINSHALL"  # Mogul §5.1
    MSMV = "MSMV"  # Mogul §5.2
    EOM = "EOM"  # Mogul §5.3
    E_M = "E+M"  # Mogul §5.4, figure 4
    MIN_MORE = "MIN+MORE"  # Mogul table 3
    DLDET = "DLDET"  # Mogul §5.6, figure 6
    E_M_M = "E+M+M"  # Mogul table 3
    E_M_D = "E+M+D"  # Mogul table 3
    BORMAN = "BORMAN"  # Mogul §5.5, figure 5 (with MORE, as §8 says the authors built it)
    UNACKED_MSS = "UNACKED-MSS"  # Moldeklev §4.2.1
    CORK = "CORK"  # Linux TCP_CORK, Mogul §2.3, docs/tcp-rules.md#linux-nagle-minshall-cork-and-nodelay

    @classmethod
    def parse(cls, name: str) -> NagleVariant:
        """Accept the exact name, case-insensitively, or the enum member name (E_M_D)."""
        key = name.strip().upper()
        for v in cls:
            if v.value == key or v.name == key:
                return v
        raise ValueError(f"unknown Nagle variant {name!r}; expected one of {', '.join(v.value for v in cls)}")
