"""tru64 sends a short segment only at the end of a write (Personality.write_more_hold).

Mogul & Minshall section 3.3 model the OF+SFS delay for a message written at once: full segments
and one short final segment, delayed iff (2N+1)*MSS < length < (2N+2)*MSS. Their FDDI NAGLE
scores with 128 KB writes follow it (44.5 %, the model 43.9 %). A 4.4BSD sosend that calls
tcp_output per 8192-byte cluster sends the first cluster as 4312 + 3880 on an idle connection, which
moves every delayed band by 3880 bytes; these tests fail on that segmentation.
"""
from __future__ import annotations

from stallscope.simulate.apps import naglemark as nm
from stallscope.simulate.apps.naglemark_net import make_network
from stallscope.simulate.tcp.personality import PERSONALITIES

FDDI_MSS = 4312


def _elapsed_ms(variant: str, app_buf: int, sockbuf: int, lengths: list[int]) -> dict[int, float]:
    net, rate = make_network(personality="tru64", link="fddi", variant=variant, sockbuf=sockbuf,
                             receiver_inference=False, seed=0)
    r = nm.run_trial(net, trial=nm.TrialType.S, app_buf=app_buf, sockbuf=sockbuf, raw_rate_bps=rate, lengths=lengths)
    return {s.length: s.elapsed_ns / 1e6 for s in r.samples}


def _in_model_band(length: int) -> bool:
    n = length // FDDI_MSS
    return n % 2 == 1 and length % FDDI_MSS != 0 and length >= 2 * FDDI_MSS


def test_only_tru64_holds_short_segments_inside_a_write():
    assert PERSONALITIES["tru64"].write_more_hold
    assert not any(p.write_more_hold for name, p in PERSONALITIES.items() if name != "tru64")


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
