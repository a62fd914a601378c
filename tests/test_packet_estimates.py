"""The packet table's timer estimate and spurious-retransmission flag (analyzers/estimates.py),
against an explicit RFC 6298 recurrence and on the recorded captures whose emulator dropped known
packets: ack_loss (ACKs lost, the data had arrived: its timeouts' resends were not needed) and
burst_loss_sack (data lost, SACK repairs it: every resend was needed)."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

from stallscope.analyzers.analyze import analyze_one

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


def _rfc6298(samples: list[int]) -> tuple[float, float]:
    srtt = rttvar = None
    for r in samples:
        if srtt is None:
            srtt, rttvar = r, r / 2
        else:
            rttvar = 0.75 * rttvar + 0.25 * abs(srtt - r)
            srtt = 0.875 * srtt + 0.125 * r
    return srtt, rttvar


DATA = Path(__file__).resolve().parent / "data"


@pytest.mark.parametrize("path", [FIXTURES / "burst_loss_sack.pcap", FIXTURES / "clean_bulk.pcap",
                                  DATA / "linux_slow_reader_20ms_no_timestamps.receiver.pcap"])
def test_the_timer_estimate_follows_rfc_6298(path: Path) -> None:
    """With timestamps the samples are the peer's echoes (RFC 7323), without them Karn's."""
    st = analyze_one(path).state
    echoes = st.filter((pl.col("dir") == 1) & pl.col("rtt_ts_ns").is_not_null())
    if echoes.height:
        samples = echoes.select(at=pl.col("ts_ns"), r=pl.col("rtt_ts_ns"))
    else:
        samples = st.filter((pl.col("dir") == 0) & pl.col("rtt_ns").is_not_null()).select(
            at=pl.col("ts_ns") + pl.col("rtt_ns"), r=pl.col("rtt_ns"))
    samples = samples.sort("at")
    assert samples.height > 20
    # The estimate on the last row of the direction holds every sample that arrived before it.
    last = st.filter(pl.col("dir") == 0).tail(1)
    taken = samples.filter(pl.col("at") <= last["ts_ns"][0])["r"].to_list()
    srtt, rttvar = _rfc6298(taken)
    assert abs(last["srtt_ns"][0] - srtt) <= 1 and abs(last["rttvar_ns"][0] - rttvar) <= 1
    assert last["rto_ns"][0] == last["srtt_ns"][0] + 4 * last["rttvar_ns"][0]
    # Before the first sample there is no estimate.
    first_at = samples["at"][0]
    assert st.filter((pl.col("dir") == 0) & (pl.col("ts_ns") < first_at))["srtt_ns"].null_count() == \
        st.filter((pl.col("dir") == 0) & (pl.col("ts_ns") < first_at)).height


def test_resends_behind_lost_acks_were_not_needed() -> None:
    st = analyze_one(FIXTURES / "ack_loss.pcap").state
    resent = st.filter(pl.col("retransmission") & (pl.col("payload_len") > 0))
    assert resent.height >= 2
    assert resent["spurious_retransmission"].sum() >= 1
    # Packets that are not resends carry no flag.
    assert st.filter(~pl.col("retransmission"))["spurious_retransmission"].null_count() == \
        st.filter(~pl.col("retransmission")).height


def test_sack_repairs_of_lost_data_were_needed() -> None:
    st = analyze_one(FIXTURES / "burst_loss_sack.pcap").state
    resent = st.filter(pl.col("retransmission") & (pl.col("payload_len") > 0))
    assert resent.height >= 10
    assert resent["spurious_retransmission"].sum() == 0


def _limits(name: str) -> dict[str, int]:
    st = analyze_one(FIXTURES / f"{name}.pcap").state
    data = st.filter((pl.col("payload_len") > 0) & (pl.col("dir") == st.filter(pl.col("payload_len") > 0)
                                                     .group_by("dir").len().sort("len")["dir"][-1]))
    return dict(data.group_by("limit").len().iter_rows())


def test_each_packet_names_what_limited_its_sender() -> None:
    """The per-packet limit (timeline.packet_limits) on captures whose limit is known: a slow
    reader's data sits inside its window stalls, a small send buffer's at its plateau, and each of
    nagle_4k_jumbo's 23 held segments opens a Nagle stall."""
    assert _limits("slow_reader").get("stall:receiver_window_limited", 0) > 100
    assert _limits("small_sndbuf_long_rtt").get("send_buffer", 0) >= 20
    assert _limits("nagle_4k_jumbo")["stall:nagle_delayed_ack"] == 23
    # Only the direction's last data packet (its span ends there) has no limit.
    assert _limits("clean_bulk").get(None) == 1


def test_an_echo_names_the_transmission_it_answers() -> None:
    """burst_loss: Karn's rule drops every resent range's sample; the echoes still give one for the
    ACKs of resends, each the time since the packet that carried the echoed value."""
    st = analyze_one(FIXTURES / "burst_loss.pcap").state
    acks = st.filter(pl.col("rtt_ts_ns").is_not_null())
    assert acks.height > 500 and (acks["dir"] == 1).all() and acks["acks_new"].all()
    sent = st.filter((pl.col("dir") == 0) & (pl.col("payload_len") > 0)).group_by("opt_ts_val").agg(
        pl.col("ts_ns").min())
    one = acks.join(sent, left_on="opt_ts_ecr", right_on="opt_ts_val").head(50)
    assert (one["ts_ns"] - one["ts_ns_right"] == one["rtt_ts_ns"]).all()
