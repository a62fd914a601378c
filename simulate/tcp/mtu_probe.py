"""Packetization-layer path MTU discovery as Linux does it with tcp_mtu_probing = 1 (RFC 4821,
net/ipv4/tcp_output.c tcp_mtu_probe): once black-hole detection has turned probing on, a binary
search between the largest MTU known to work (search_low) and the smallest known or assumed to
fail (search_high), one probe segment at a time; an acknowledged probe raises the MSS to its size,
a lost one lowers search_high. MTUs here count the IP and TCP headers of the connection's data
segments: 40 bytes, 52 with the timestamp option.
"""

from __future__ import annotations

from dataclasses import dataclass

HEADERS = 40  # IP + TCP without options (the timestamp option adds 12)
PROBE_THRESHOLD = 8  # net.ipv4.tcp_probe_threshold: stop when high - low is smaller
REORDERING = 3  # tp->reordering: the probe needs this many segments after it to be judged
MIN_CWND_SEGMENTS = 11  # tcp_mtu_probe: no probe while cwnd is below 11 segments


@dataclass(slots=True)
class MtuSearch:
    search_low: int  # MTU
    search_high: int  # MTU
    headers: int = HEADERS  # bytes of IP and TCP header (with options) between MSS and MTU
    probe: tuple[int, int, int] | None = None  # (MTU, first seq, end seq) of the probe in flight


def new_search(mss_clamp: int, base_mss: int, headers: int = HEADERS) -> MtuSearch:
    """tcp_mtup_init: high from the negotiated MSS (with the bare 40-byte headers, as Linux's
    mss_clamp + sizeof(tcphdr) + network header), low from tcp_base_mss (tcp_mss_to_mtu: with
    the connection's options)."""
    return MtuSearch(search_low=base_mss + headers, search_high=mss_clamp + HEADERS, headers=headers)


def probe_size(st: MtuSearch) -> int | None:
    """The next probe's payload, or None when the search is over (the interval is below the
    threshold, or the midpoint is no larger than the top)."""
    size = (st.search_high + st.search_low) // 2 - st.headers
    if size > st.search_high - st.headers or st.search_high - st.search_low < PROBE_THRESHOLD:
        return None
    return size


def succeeded(st: MtuSearch) -> int:
    """tcp_mtup_probe_success: the probe's MTU works; returns the new MSS."""
    assert st.probe is not None
    st.search_low = st.probe[0]
    st.probe = None
    return st.search_low - st.headers


def failed(st: MtuSearch) -> None:
    """tcp_mtup_probe_failed: everything from the probe's MTU up is taken to fail."""
    assert st.probe is not None
    st.search_high = st.probe[0] - 1
    st.probe = None
