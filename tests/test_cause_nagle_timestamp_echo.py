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


def _rows(packets: list[tuple[int, int, int, int]]) -> dict[str, list]:
    """(dir, payload, TSval, TSecr) per packet, in time order; no SYN or FIN."""
    return {"dir": [p[0] for p in packets], "payload_len": [p[1] for p in packets],
            "flag_syn": [False] * len(packets), "flag_fin": [False] * len(packets),
            "opt_ts_val": [p[2] for p in packets], "opt_ts_ecr": [p[3] for p in packets]}


def test_a_sender_is_read_as_not_echoing_pure_acks_only_on_evidence() -> None:
    from stallscope.analyzers.stalls import echoes_pure_acks

    # RFC 1323's rule: the peer's request (data, TSval 10) is echoed, its pure ACKs (11, 21, 31)
    # never, though the sender's next packet followed each.
    rfc1323 = [(1, 8, 10, 1), (0, 100, 1, 10), (1, 0, 11, 1), (0, 8, 1, 10),
               (1, 8, 20, 1), (0, 100, 1, 20), (1, 0, 21, 1), (0, 8, 1, 20),
               (1, 8, 30, 1), (0, 100, 1, 30), (1, 0, 31, 1), (0, 8, 1, 30)]
    assert echoes_pure_acks(_rows(rfc1323), 0) is False
    # RFC 7323's, seen at the receiver: each data segment at the tap left before the ACK just seen,
    # but echoes an earlier pure ACK's value.
    rfc7323 = [(1, 0, 11, 1), (0, 100, 2, 5), (1, 0, 12, 2), (0, 100, 3, 11), (1, 0, 13, 3), (0, 100, 4, 12),
               (1, 0, 14, 4), (0, 100, 5, 13)]
    assert echoes_pure_acks(_rows(rfc7323), 0) is True
    # Too few packets after pure ACKs to tell.
    assert echoes_pure_acks(_rows(rfc1323[:8]), 0) is True
