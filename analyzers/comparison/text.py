"""The comparison for a person (Rich): per connection, the verdict against the reference, the fit's
main values, and the what-ifs ranked by predicted gain. Text from the capture (its path) is escaped
for Rich markup; everything else here is the project's own wording and numbers."""

from __future__ import annotations

from typing import Any

from rich.table import Table

from stallscope.untrusted_text import terminal as escape  # (markup and control characters)

from ..analysis_text import rate

FIT_SHOWN = ("personality", "receiver_personality", "mss", "sndbuf", "rcvbuf", "rate_bps", "delay_ns", "write", "nagle",
             "sack", "app_buf", "variant", "route_mtu", "atm_switch", "jumbo_nic", "pmtu_hop", "mtu_probing")


def _value(name: str, v: Any) -> str:
    if v is None:
        return "default"
    if name == "rate_bps":
        return rate(v)
    if name == "delay_ns":
        return f"{v / 1e6:.3f} ms"
    if name == "atm_switch":
        return f"{v['buffer_cells']} cells {v['policy']}, {rate(v['out_rate_bps'])} out"
    if name == "jumbo_nic":
        back = "on ACK" if v.get("hold_until_acked") else f"after {v.get('replenish_ns', 0) / 1e6:g} ms"
        return f"{v['slots']} slots back {back}"
    if name == "pmtu_hop":
        return f"MTU {v['mtu']} {v['mode']}"
    if name == "mtu_probing":
        return "on (RFC 4821)" if v else "off"
    return str(v)


def tables(path: str, references: list[Any]) -> list[Table]:
    """One table per compared connection: the verdict and fit, then the what-ifs."""
    out = []
    for ref in references:
        cmp = ref.comparison
        t = Table(title=f"{escape(path)} stream {ref.stream}: reference simulator ({ref.fit.kind.replace('_', '/')})",
                  show_header=True, title_justify="left")
        t.add_column("")
        t.add_column("trace")
        t.add_column("reference")
        t.add_row("goodput", rate(cmp.goodput_trace_bps), rate(cmp.goodput_model_bps))
        for cause in sorted(set(cmp.time_lost_trace) | set(cmp.time_lost_model)):
            t.add_row(f"time lost: {cause}", f"{cmp.time_lost_trace.get(cause, 0) / 1e6:.1f} ms",
                      f"{cmp.time_lost_model.get(cause, 0) / 1e6:.1f} ms")
        verdict = ("[green]" if cmp.matches else "[yellow]") + escape(cmp.verdict) + "[/]"
        t.add_row("verdict", verdict, "")
        fitted = ", ".join(f"{n}={_value(n, ref.fit.value(n))}" for n in FIT_SHOWN if n in ref.fit.values)
        t.add_row("fitted", escape(fitted), "")
        if ref.poor_fit:
            t.add_row("", "[yellow]the fitted run is far from the trace: predictions below are indicative only[/]", "")
        out.append(t)
        if ref.what_ifs:
            w = Table(title=f"what-ifs, stream {ref.stream} (against the fitted run)", title_justify="left")
            w.add_column("change")
            w.add_column("predicted goodput", justify="right")
            w.add_column("gain", justify="right")
            w.add_column("time lost left")
            for p in ref.what_ifs:
                left = ", ".join(f"{c} {ns / 1e6:.0f} ms" for c, ns in sorted(p.time_lost_ns.items()) if ns) or "none"
                w.add_row(escape(f"{p.name}: {p.description}"), rate(p.goodput_bps),
                          "-" if p.gain is None else f"{p.gain:.2f}x", escape(p.error or left))
            out.append(w)
    return out
