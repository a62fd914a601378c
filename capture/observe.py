"""What a scenario's capture shows, read with dpkt: segment sizes, MSS options, retransmission
timeouts, zero windows, ICMP. Written into the scenario JSON and used by the tests to check that
each scenario produced the pathology it claims (independently of the project's own analyzers)."""

from __future__ import annotations

from collections import Counter
from decimal import Decimal
from dataclasses import asdict, dataclass, field
from pathlib import Path

import dpkt

# Linux never fires a retransmission timer sooner than this (TCP_RTO_MIN).
RTO_MIN_NS = 200_000_000


@dataclass
class Observed:
    packets: int = 0
    data_segments: int = 0  # sender -> receiver segments carrying payload
    payload_sizes: Counter = field(default_factory=Counter)
    syn_mss: dict[str, int] = field(default_factory=dict)  # "sender"/"receiver" -> MSS option
    retransmissions: int = 0
    timeouts: int = 0  # retransmissions after >= RTO_MIN of sender silence
    max_backoff: int = 0  # longest run of consecutive timeouts of one sequence number
    zero_windows: int = 0  # receiver -> sender segments advertising a zero window
    icmp_frag_needed: int = 0
    data_gaps_ns: list[int] = field(default_factory=list)  # silences between sender data, >= 20 ms

    @property
    def max_payload(self) -> int:
        return max(self.payload_sizes, default=0)

    def to_json(self) -> dict:
        d = asdict(self)
        d["payload_sizes"] = {str(k): v for k, v in sorted(self.payload_sizes.most_common(8))}
        d["data_gaps_ns"] = sorted(self.data_gaps_ns, reverse=True)[:20]
        d["max_payload"] = self.max_payload
        return d


def _mss(tcp: dpkt.tcp.TCP) -> int | None:
    for kind, value in dpkt.tcp.parse_opts(tcp.opts):
        if kind == dpkt.tcp.TCP_OPT_MSS and len(value) == 2:
            return int.from_bytes(value, "big")
    return None


def _reader(f):
    head = f.read(4)
    f.seek(0)
    if head == b"\x0a\x0d\x0d\x0a":
        return dpkt.pcapng.Reader(f)
    return dpkt.pcap.Reader(f)


def observe(pcap: Path, sender_ip: str, receiver_ip: str, gap_ns: int = 20_000_000) -> Observed:
    """Facts about the sender -> receiver data direction of every TCP connection in `pcap`."""
    addr = dpkt.utils.inet_to_str
    obs = Observed()
    highest: dict[tuple, int] = {}  # connection -> highest sequence end sent
    last_send_ns: int | None = None
    last_data_ns: int | None = None
    backoff: dict[tuple, tuple[int, int]] = {}  # connection -> (seq, consecutive timeouts)
    with open(pcap, "rb") as f:
        reader = _reader(f)
        for ts, buf in reader:
            ts_ns = int(Decimal(ts) * 1_000_000_000)  # dpkt: Decimal for nanosecond pcaps, float otherwise
            obs.packets += 1
            eth = dpkt.ethernet.Ethernet(buf)
            ip = eth.data
            if not isinstance(ip, dpkt.ip.IP):
                continue
            src, dst = addr(ip.src), addr(ip.dst)
            if isinstance(ip.data, dpkt.icmp.ICMP):
                icmp = ip.data
                if icmp.type == dpkt.icmp.ICMP_UNREACH and icmp.code == dpkt.icmp.ICMP_UNREACH_NEEDFRAG:
                    obs.icmp_frag_needed += 1
                continue
            tcp = ip.data
            if not isinstance(tcp, dpkt.tcp.TCP):
                continue
            if tcp.flags & dpkt.tcp.TH_SYN:
                mss = _mss(tcp)
                side = "sender" if src == sender_ip else "receiver" if src == receiver_ip else None
                if mss is not None and side:
                    obs.syn_mss[side] = mss
                continue
            payload = ip.len - ip.hl * 4 - tcp.off * 4
            if src == receiver_ip and dst == sender_ip:
                if tcp.win == 0 and not tcp.flags & dpkt.tcp.TH_RST:
                    obs.zero_windows += 1
                continue
            if not (src == sender_ip and dst == receiver_ip):
                continue
            if payload <= 0:
                continue
            conn = (tcp.sport, tcp.dport)
            obs.data_segments += 1
            obs.payload_sizes[payload] += 1
            end = (tcp.seq + payload) & 0xFFFFFFFF
            top = highest.get(conn)
            is_retx = top is not None and ((top - end) & 0xFFFFFFFF) < 0x80000000
            if is_retx:
                obs.retransmissions += 1
                if last_send_ns is not None and ts_ns - last_send_ns >= RTO_MIN_NS:
                    obs.timeouts += 1
                    seq, run = backoff.get(conn, (None, 0))
                    run = run + 1 if seq == tcp.seq else 1
                    backoff[conn] = (tcp.seq, run)
                    obs.max_backoff = max(obs.max_backoff, run)
            else:
                highest[conn] = end
                backoff.pop(conn, None)
            if last_data_ns is not None and ts_ns - last_data_ns >= gap_ns:
                obs.data_gaps_ns.append(ts_ns - last_data_ns)
            last_data_ns = ts_ns
            last_send_ns = ts_ns
    return obs
