"""`stallscope simulate bulk`'s path impairments: the command-line options turned into the
`make_path` keywords (simulate/links/presets.py), so what-if runs need no Python."""

from __future__ import annotations

from enum import Enum
from typing import Any


class PmtuMode(str, Enum):
    icmp = "icmp"
    blackhole = "blackhole"


class AtmPolicy(str, Enum):
    none = "none"
    ppd = "ppd"
    epd = "epd"


def impairments_from_options(
    *,
    loss: float | None,
    reverse_loss: float | None,
    drop_nth: list[int] | None,
    data_only: bool,
    pmtu: int | None,
    pmtu_mode: PmtuMode,
    jumbo_slots: int | None,
    atm_switch_buffer: int | None,
    atm_out_rate: int | None,
    atm_policy: AtmPolicy,
    gilbert: str | None = None,
) -> dict[str, Any]:
    """The keywords for run_bulk(impairments=...); an option left out adds nothing. Raises
    ValueError for a combination make_path cannot take."""
    from stallscope.simulate.links.presets import AtmSwitchSpec

    im: dict[str, Any] = {}
    if loss:
        im["loss"] = loss
    if reverse_loss:
        im["reverse_loss"] = reverse_loss
    if gilbert:
        im["gilbert"] = parse_gilbert(gilbert)
    if drop_nth:
        im["drop_nth"] = tuple(sorted(set(drop_nth)))
    if data_only:
        if not (loss or drop_nth or gilbert):
            raise ValueError("--loss-data-only needs --loss, --gilbert or --drop-nth")
        im["loss_data_only"] = True
    if pmtu is not None:
        im["pmtu_mtu"] = pmtu
        im["pmtu_mode"] = pmtu_mode.value
    if jumbo_slots is not None:
        im["jumbo_slots"] = jumbo_slots
    if (atm_switch_buffer is None) != (atm_out_rate is None):
        raise ValueError("an ATM switch port needs both --atm-switch-buffer and --atm-out-rate")
    if atm_switch_buffer is not None and atm_out_rate is not None:
        im["atm_switch"] = AtmSwitchSpec(atm_switch_buffer, atm_out_rate, atm_policy.value)
    return im


def parse_gilbert(text: str) -> tuple[float, float, float, float]:
    """`P_GB,P_BG,LOSS_GOOD,LOSS_BAD` (make_path's gilbert): the chance per packet of going from
    the good state to the bad one and back, and the loss probability in each state."""
    try:
        values = tuple(float(v) for v in text.split(","))
    except ValueError:
        values = ()
    if len(values) != 4 or not all(0.0 <= v <= 1.0 for v in values):
        raise ValueError(f"--gilbert takes four probabilities P_GB,P_BG,LOSS_GOOD,LOSS_BAD, got {text!r}")
    return values  # type: ignore[return-value]
