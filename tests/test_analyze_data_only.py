"""A capture filtered to packets with payload (tests/data/tls_data_only.pcap: the first 1,100 packets
of PcapPlusPlus' public tls2.pcap, a browser's TLS connections with every SYN, FIN and pure ACK
left out, cut to 96 bytes). The servers' IPv4 ids skip by one or two at each exchange: the pure
ACKs the filter dropped. Read as packets lost before the tap, they made each 30 s keep-alive
pause of connections 4 and 5 a `burst_loss_timeout`; the pauses are the browser's, between
requests, and the capture cannot show a loss there."""

from __future__ import annotations

from pathlib import Path

from stallscope.analyzers.analyze import analyze_one

CAPTURE = Path(__file__).resolve().parent / "data" / "tls_data_only.pcap"


def test_a_capture_without_packets_free_of_payload_is_noted_and_its_id_skips_are_not_losses() -> None:
    f = analyze_one(CAPTURE)
    assert [n.kind for n in f.notes].count("data_only") == 1
    stalls = [s for c in f.connections for s in c.stalls]
    assert not any("ids_unseen" in s.evidence for s in stalls)
    pauses = [s for c in f.connections if c.stream in (4, 5) for s in c.stalls if s.duration_ns > 20_000_000_000]
    assert len(pauses) == 4
    assert {s.cause for s in pauses} == {"application_idle"}


def test_a_capture_with_its_acks_keeps_reading_ids(tmp_path: Path) -> None:
    """The note needs every packet to carry payload: one pure ACK put back (the first data packet
    with its payload length cut to zero) and the file is not called filtered."""
    import pcap_edit

    cap = pcap_edit.read(CAPTURE)
    first = cap.records[0]
    t = pcap_edit.tcp_of(first)
    header_len = t.tcp_off - t.ip_off + t.tcp_hdr_len
    data = pcap_edit.set_u16(first.data, t.ip_off + 2, header_len)
    edited = cap.replace_records([first.with_data(data[:t.tcp_off + t.tcp_hdr_len], t.tcp_off + t.tcp_hdr_len)]
                                 + cap.records[1:]).write(tmp_path / "one_ack.pcap")
    assert "data_only" not in [n.kind for n in analyze_one(edited).notes]
