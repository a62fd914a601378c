"""The link presets and personalities the Python API names are the simulator core's own
(native/src/sim/link.rs, native/src/sim/tcp/personality.rs): a preset added or changed on one
side only fails here."""

from __future__ import annotations

from stallscope import _native
from stallscope.simulate.links.presets import LINK_PRESETS
from stallscope.simulate.native_core import PERSONALITIES


def test_link_presets_are_the_cores():
    core = {name: (rate, delay, mtu, small, large) for name, rate, delay, mtu, small, large in _native.sim_link_presets()}
    python = {p.name: (p.rate_bps, p.delay_ns, p.mtu, p.wire_bytes(40), p.wire_bytes(1500)) for p in LINK_PRESETS.values()}
    assert python == core


def test_personalities_are_the_cores():
    assert tuple(_native.sim_personalities()) == PERSONALITIES
