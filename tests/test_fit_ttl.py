"""The fit's stack choice reads the sender's IP TTL (analyzers/comparison/fit/stack.py ttl_ruled_out):
SunOS 4.1 and OSF/1 kept 4.3BSD-Tahoe's TCP_TTL of 60, 4.4BSD and Linux send 64. A TTL of 61-64
rules out the 60 stacks anywhere; 60 rules out the 64 stacks only at the host's own tap (elsewhere
it may be 64 less four routers); other TTLs say nothing of these stacks."""

from __future__ import annotations

import polars as pl
import pytest

from stallscope.analyzers.comparison.fit.stack import stacks_ruled_out, ttl_ruled_out


@pytest.mark.parametrize("ttl, at_host, out", [
    (64, True, {"sunos41", "tru64"}), (62, False, {"sunos41", "tru64"}),
    (60, True, {"bsd44", "linux20"}), (60, False, set()), (59, True, set()), (128, True, set()),
    (None, True, set())])
def test_a_ttl_rules_out_the_stacks_that_start_elsewhere(ttl, at_host, out) -> None:
    assert set(ttl_ruled_out(ttl, at_host)) == out


def test_the_ttl_joins_what_the_segments_and_windows_rule_out() -> None:
    """A window above 32767 rules out Linux 2.0; a TTL of 64 then SunOS and Tru64: 4.4BSD is left."""
    ruled = stacks_ruled_out({"peer_receive_window_max": 65535}, 64, True)
    assert set(ruled.value) == {"linux20", "sunos41", "tru64"}
    assert "TTL of 64" in ruled.source and "above Linux 2.0's" in ruled.source
    assert set(stacks_ruled_out({"peer_receive_window_max": 65535}).value) == {"linux20"}


def test_a_simulated_sunos_trace_is_fitted_as_sunos_by_its_ttl(tmp_path) -> None:
    """idle traces (2000-byte writes every 300 ms) show nothing of a pre-1323 stack but its TTL: a
    SunOS 4.1 sender's was fitted as the 4.4BSD reference stack before the simulator's captures
    carried each stack's TTL (simulate.pcap_writer.PERSONALITY_TTL)."""
    from stallscope.analyzers.analyze import analyze_file
    from stallscope.analyzers.comparison import fit_connection
    from stallscope.simulate.run_bulk import BulkConfig, run_bulk

    pcap = tmp_path / "sunos.pcap"
    run_bulk(BulkConfig(personality="sunos41", link="ethernet10", bytes=20_000, write=2000, think_ns=300_000_000),
             pcap)
    fa = analyze_file(pcap).files[0]
    conn = fa.connections[0]
    assert conn.directions[0].profile["ttl_max"] == 60
    fit = fit_connection(conn, fa.state.filter(pl.col("stream") == conn.stream))  # (the first estimate, before refine)
    assert fit.value("personality") == "sunos41", fit.values["personality"].source
    assert "TTL of 60" in fit.values["personality"].source
