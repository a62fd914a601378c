"""The Nagle rule on a sender whose timestamp echoes never name a pure ACK (RFC 1323's rule for
TS.Recent), read from tcpdump's public OpenFlow capture (tests/data/openflow_rfc1323_echo.pcap)."""

from __future__ import annotations

from pathlib import Path

def test_a_sender_that_never_echoes_pure_acks_still_reacts_to_them() -> None:
    """tcpdump's of10_pf5240.pcap: an OpenFlow switch (Pica8 P-5240) talking to its controller,
    captured at the controller. The switch's small messages wait behind an unacknowledged one until
    the controller's 40 ms delayed ACK: Nagle. Its TCP follows RFC 1323's timestamp rule (TS.Recent
    from data segments only), so its echo never names a pure ACK, and the check that the closing
    segment echoes the releasing ACK (RFC 7323's rule) found no release: the holds were read as
    the application's, one as a burst loss from IPv4 ids the switch's other connection took."""
    from stallscope.analyzers.analyze import analyze_file

    causes = [s.cause for s in analyze_file(Path(__file__).parent / "data" / "openflow_rfc1323_echo.pcap").stalls]
    assert causes.count("nagle_delayed_ack") >= 4
    assert not {"burst_loss_timeout", "single_loss_timeout"} & set(causes)
