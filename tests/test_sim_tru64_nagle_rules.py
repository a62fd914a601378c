"""Two tru64 rules that Mogul & Minshall's tables show: a short segment only at the end of a write
(the personality's write_more_hold, native/src/sim/tcp/personality.rs) and MINSHALL as his kernel
measured it (minshall_idle_writes_only).

Mogul & Minshall section 3.3 model the OF+SFS delay for a message written at once: full segments
and one short final segment, delayed iff (2N+1)*MSS < length < (2N+2)*MSS. Their FDDI NAGLE
scores with 128 KB writes follow it (44.5 %, the model 43.9 %). A 4.4BSD sosend that calls
tcp_output per 8192-byte cluster sends the first cluster as 4312 + 3880 on an idle connection, which
moves every delayed band by 3880 bytes; these tests fail on that segmentation.
"""
from __future__ import annotations

import pytest

from stallscope.simulate.apps import naglemark as nm
from stallscope.simulate.run_bulk import SENDER_ADDR, BulkConfig, run_bulk

FDDI_MSS = 4312


def _elapsed_ms(variant: str, app_buf: int, sockbuf: int, lengths: list[int], link: str = "fddi") -> dict[int, float]:
    r = nm.run_trial(personality="tru64", link=link, variant=variant, sockbuf=sockbuf, app_buf=app_buf,
                     trial=nm.TrialType.S, lengths=lengths, receiver_inference=False, seed=0)
    return {s.length: s.elapsed_ns / 1e6 for s in r.samples}


def _in_model_band(length: int) -> bool:
    n = length // FDDI_MSS
    return n % 2 == 1 and length % FDDI_MSS != 0 and length >= 2 * FDDI_MSS


@pytest.mark.parametrize("personality, torn", [("sunos41", True), ("bsd44", True), ("tru64", False)])
def test_only_tru64_holds_short_segments_inside_a_write(personality, torn):
    """One 20000-byte write on an idle FDDI connection, copied into the socket buffer a chunk at a
    time: SunOS (4 KB chunks) and 4.4BSD (2 KB clusters) send the first chunk alone as a short
    segment; tru64 keeps its 8 KB cluster's 3880-byte tail back while the write has bytes to copy,
    so only the write's last segment is short."""
    r = run_bulk(BulkConfig(personality=personality, link="fddi", sndbuf=131072, rcvbuf=131072, write=20000,
                            read=131072, bytes=20000))
    sizes = [s.payload_len for _, s in r.records if s.src == SENDER_ADDR and s.payload_len]
    assert r.completed and sum(sizes) == 20000
    assert any(n < max(sizes) for n in sizes[:-1]) is torn, sizes


def test_nagle_delays_exactly_the_section_3_3_lengths_with_one_large_write():
    """One 128 KB write into a 128 KB buffer: a length inside an odd band waits for the receiver's
    200 ms tick (tens of ms here), one outside is sent at once (about the FDDI transfer time)."""
    lengths = [10000, 14000, 19000, 23000, 27000, 32000]
    elapsed = _elapsed_ms("NAGLE", 131072, 131072, lengths)
    for length in lengths:
        if _in_model_band(length):
            assert elapsed[length] > 20, (length, elapsed)
        else:
            assert elapsed[length] < 5, (length, elapsed)


def test_minshall_does_not_stall_when_a_large_write_refills_a_16k_buffer():
    """Mogul table 5, MINSHALL 128 KB writes / 16 KB socket buffer: 0.0 %. The write sleeps for
    buffer space part-way through; the ACK that wakes it must not send the remainder of the copied
    clusters as a short segment, or the write's last bytes wait behind it for the 200 ms tick."""
    elapsed = _elapsed_ms("MINSHALL", 131072, 16384, [20000, 35000, 60000])
    assert all(ms < 10 for ms in elapsed.values()), elapsed


def test_a_write_of_less_than_an_mss_still_goes_alone_first():
    """With 4 KB writes (below the FDDI MSS) nothing changes: the first write leaves alone on the
    idle connection and MINSHALL holds the next one (Mogul section 8, figure 9)."""
    elapsed = _elapsed_ms("MINSHALL", 4096, 131072, [10000])
    assert elapsed[10000] > 20


# --- MINSHALL as Mogul's Tru64 kernel measured it (minshall_idle_writes_only) -----------------
# snd_sml remembers only a short segment a write sent alone on an idle connection: not one that
# follows full segments in the same idle tcp_output call, nor one an ACK's tcp_output sent. The
# rule's cases are unit tests beside the code (native/src/sim/nagle.rs); here its effect on
# naglemark as Mogul's tables show it.


def test_ethernet_minshall_with_4k_writes_does_not_stall_behind_the_first_writes_end():
    """Mogul table 4, MINSHALL 4 KB writes: 0.3-1.1 % in every column, and section 8: MINSHALL does
    well except when app_buf_size is smaller than the MSS. On Ethernet (MSS 1460 < 4096) lengths
    from 4097 to 4096 + 2 * MSS are the ones a remembered 1176-byte end would stall; NAGLE still
    stalls there (section 3.1's buffer tearing: 4100 bytes from a 4096-byte buffer)."""
    lengths = [4200, 5000, 6000, 6900]
    minshall = _elapsed_ms("MINSHALL", 4096, 131072, lengths, link="ethernet10")
    assert all(ms < 20 for ms in minshall.values()), minshall
    nagle = _elapsed_ms("NAGLE", 4096, 131072, lengths, link="ethernet10")
    assert all(ms > 40 for ms in nagle.values()), nagle


def test_minshall_does_not_hold_the_next_write_behind_a_32k_writes_short_end():
    """Mogul table 5, MINSHALL 32 KB writes / 16 KB buffer: 0.0 % (his EOM and MSMV stall there,
    14.1 and 10.3 %): 34000 bytes as a 32768-byte write and a 1232-byte one."""
    elapsed = _elapsed_ms("MINSHALL", 32768, 16384, [34000])
    assert elapsed[34000] < 10
    assert _elapsed_ms("EOM", 32768, 16384, [34000])[34000] > 20


@pytest.mark.parametrize("sndbuf", [2048, 4096, 8192])
def test_a_send_buffer_below_the_cluster_mark_still_sends(sndbuf):
    """Tru64's writer waits for 8 KB of room (its cluster, soreserve's low-water mark) before a copy
    round; under a smaller SO_SNDBUF the mark is the buffer's size (soreserve clips it, as FreeBSD's
    sosetopt does after SO_SNDBUF). Unclipped, a 4 KB buffer never had 8 KB free: the holdout
    corpus's run sent nothing in four simulated hours."""
    r = run_bulk(BulkConfig(personality="tru64", link="custom", rate_bps=2_000_000, delay_ns=20_000_000, mtu=1500,
                            sndbuf=sndbuf, write=8192, read=8192, bytes=65536))
    sent = sum(s.payload_len for _, s in r.records if s.src == SENDER_ADDR)
    assert r.completed and sent >= 65536 and r.duration_ns < 10_000_000_000
