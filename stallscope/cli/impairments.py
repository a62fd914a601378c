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


class JumboRelease(str, Enum):
    """When a jumbo receive slot comes back: when the cumulative ACK covers its data (out-of-order
    data keeps its slot in the reassembly queue), or a fixed time after the frame arrived."""

    acked = "acked"
    timer = "timer"


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
    atm_policy: AtmPolicy | None,
    gilbert: str | None = None,
    jumbo_replenish_us: float | None = None,
    jumbo_release: JumboRelease | None = None,
    jumbo_min_frame: int | None = None,
    atm_buffer_cells: int | None = None,
    atm_epd_threshold_cells: int | None = None,
    preset: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The keywords for run_bulk(impairments=...): a preset's (if any), overridden by the options
    given; an option left out adds nothing. Raises ValueError for a combination make_path cannot
    take. Units are the command line's: ATM buffers in cells (or bytes of cell payload with the
    older --atm-switch-buffer), slot replenish time in microseconds."""
    from dataclasses import replace

    from stallscope.simulate.links.presets import AtmSwitchSpec

    im: dict[str, Any] = dict(preset or {})
    if loss:
        im["loss"] = loss
    if reverse_loss:
        im["reverse_loss"] = reverse_loss
    if gilbert:
        im["gilbert"] = parse_gilbert(gilbert)
    if drop_nth:
        im["drop_nth"] = tuple(sorted(set(drop_nth)))
    if data_only:
        if not (im.get("loss") or im.get("drop_nth") or im.get("gilbert")):
            raise ValueError("--loss-data-only needs --loss, --gilbert or --drop-nth")
        im["loss_data_only"] = True
    if pmtu is not None:
        im["pmtu_mtu"] = pmtu
        im["pmtu_mode"] = pmtu_mode.value
    if jumbo_slots is not None:
        im["jumbo_slots"] = jumbo_slots
    if jumbo_replenish_us is not None:
        im["jumbo_replenish_ns"] = round(jumbo_replenish_us * 1000)
    if jumbo_release is not None:
        im["jumbo_hold_until_acked"] = jumbo_release is JumboRelease.acked
    if jumbo_min_frame is not None:
        im["jumbo_min_frame_len"] = jumbo_min_frame
    jumbo_knobs = {"jumbo_replenish_ns", "jumbo_hold_until_acked", "jumbo_min_frame_len"} & set(im)
    if jumbo_knobs and not im.get("jumbo_slots"):
        raise ValueError("--jumbo-replenish-us, --jumbo-release and --jumbo-min-frame need --jumbo-slots")
    if im.get("jumbo_hold_until_acked") is False and not im.get("jumbo_replenish_ns"):
        raise ValueError("--jumbo-release timer needs --jumbo-replenish-us (how long a slot stays taken)")
    if atm_switch_buffer is not None and atm_buffer_cells is not None:
        raise ValueError("give the ATM switch buffer once: --atm-buffer-cells (cells) or --atm-switch-buffer (bytes)")
    buffer_bytes = atm_buffer_cells * 48 if atm_buffer_cells is not None else atm_switch_buffer
    spec: AtmSwitchSpec | None = im.get("atm_switch")
    if spec is None and (buffer_bytes is None) != (atm_out_rate is None):
        raise ValueError("an ATM switch port needs both --atm-buffer-cells and --atm-out-rate")
    if spec is None and buffer_bytes is not None and atm_out_rate is not None:
        spec = AtmSwitchSpec(buffer_bytes, atm_out_rate, (atm_policy or AtmPolicy.none).value)
    elif spec is not None:
        changes: dict[str, Any] = {}
        if buffer_bytes is not None:
            changes["buffer_bytes"] = buffer_bytes
        if atm_out_rate is not None:
            changes["out_rate_bps"] = atm_out_rate
        if atm_policy is not None:
            changes["policy"] = atm_policy.value
        spec = replace(spec, **changes)
    if spec is None and (atm_policy is not None or atm_epd_threshold_cells is not None):
        raise ValueError("--atm-policy and --atm-epd-threshold-cells need an ATM switch port "
                         "(--atm-buffer-cells and --atm-out-rate, or an ATM preset)")
    if spec is not None and atm_epd_threshold_cells is not None:
        if spec.policy != "epd":
            raise ValueError("--atm-epd-threshold-cells needs --atm-policy epd")
        spec = replace(spec, epd_threshold_cells=atm_epd_threshold_cells)
    if spec is not None:
        if spec.capacity_cells < 1:
            raise ValueError("the ATM switch buffer must hold at least one cell")
        im["atm_switch"] = spec
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
