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
) -> dict[str, Any]:
    """The keywords for run_bulk(impairments=...); an option left out adds nothing. Raises
    ValueError for a combination make_path cannot take."""
    from stallscope.simulate.links.presets import AtmSwitchSpec

    im: dict[str, Any] = {}
    if loss:
        im["loss"] = loss
    if reverse_loss:
        im["reverse_loss"] = reverse_loss
    if drop_nth:
        im["drop_nth"] = tuple(sorted(set(drop_nth)))
    if data_only:
        if not (loss or drop_nth):
            raise ValueError("--loss-data-only needs --loss or --drop-nth")
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
