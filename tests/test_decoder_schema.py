"""The packet table's schema: the decoded frames are what packets/schema.py (which takes the native
declaration) says (tests/test_packet_schema_declared.py holds the declaration itself)."""

from pathlib import Path

import polars as pl
import pytest

from stallscope import _native
from stallscope.packets import schema
from stallscope.packets.decoder import empty_table, iter_batches, read_packets
from shared_material import PUBLIC, requires_public

FIXTURES = PUBLIC

pytestmark = requires_public
REPO = Path(__file__).resolve().parents[1]


def test_decoded_frame_has_exactly_the_schema():
    df, _ = read_packets(FIXTURES / "zeek" / "tcp_option-sack.pcap")
    assert df.schema == schema.POLARS_SCHEMA
    assert df.height == 4


def test_nullability_matches_declaration():
    df, _ = read_packets(FIXTURES / "zeek" / "communityid_ipv6.pcap")
    nulls = {c: df[c].null_count() for c in df.columns}
    for c in schema.PACKET_COLUMNS:
        if not c.nullable:
            assert nulls[c.name] == 0, c.name
    assert nulls["ip_id"] == df.height  # IPv6 has no identification field


def test_column_selection_builds_only_those_columns_in_the_order_asked():
    df, _ = read_packets(FIXTURES / "zeek" / "tcp_options.pcap", columns=["seq_rel", "frame", "opt_mss"])
    full, _ = read_packets(FIXTURES / "zeek" / "tcp_options.pcap")
    assert df.columns == ["seq_rel", "frame", "opt_mss"]
    assert df.equals(full.select("seq_rel", "frame", "opt_mss"))


def test_unknown_column_is_a_value_error():
    with pytest.raises(ValueError, match="nope"):
        read_packets(FIXTURES / "zeek" / "tcp_options.pcap", columns=["frame", "nope"])
    with pytest.raises(ValueError, match="at least one"):
        read_packets(FIXTURES / "zeek" / "tcp_options.pcap", columns=[])


def test_empty_capture_gives_empty_table_with_schema():
    df, summary = read_packets(FIXTURES / "zeek" / "empty.pcap")
    assert df.height == 0 and df.schema == empty_table().schema == schema.POLARS_SCHEMA
    assert summary.records == 0 and summary.complete


def test_batches_are_bounded_and_concatenate_to_the_whole():
    path = FIXTURES / "zeek" / "tcp_timestamp.pcap"
    batches = iter_batches(path, batch_rows=100)
    parts = list(batches)
    assert [b.height for b in parts[:-1]] == [100] * (len(parts) - 1)
    assert 0 < parts[-1].height <= 100
    whole, summary = read_packets(path)
    assert pl.concat(parts).equals(whole)
    assert batches.summary == summary


def test_flag_columns_agree_with_the_flag_bits():
    df, _ = read_packets(FIXTURES / "tcpdump" / "tcp_eight_lowest_weight_flags_set.pcap")
    for name, bit in schema._FLAG_BITS:
        assert df[f"flag_{name}"].to_list() == [(f & bit) != 0 for f in df["flags"].to_list()]
    assert df["flags"].to_list() == [0x0FF]


def test_columns_cross_without_a_copy():
    """The Arrow array wraps the very bytes Rust built: same address as the native buffer."""
    import numpy as np

    from stallscope.packets.decoder import _column

    dec = _native.Decoder(str(FIXTURES / "zeek" / "tcp_timestamp.pcap"), ["seq_raw", "src_addr"])
    columns, error, finished = dec.next_batch(1000)
    assert error is None and finished
    for col in columns:
        values = col[5]
        native_address = np.frombuffer(memoryview(values), dtype=np.uint8).ctypes.data
        array = _column(*col)
        data_buffer = array.buffers()[2 if col[1] == "str" else 1]
        assert data_buffer.address == native_address
