"""The host processing-cost model: CPU time per packet and per byte, the same for every cell.

Application copies (write/read) run at process level and are pre-empted by kernel work (segment
input, tcp_output and the driver), which runs in order on one kernel timeline. A zero model makes
the host infinitely fast, so the network alone sets throughput.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class HostCost:
    write_copy_ns_per_kb: int = 0  # user -> socket buffer copy (sosend)
    read_copy_ns_per_kb: int = 0  # socket buffer -> user copy (soreceive)
    output_ns_per_packet: int = 0  # tcp_output + ip_output + driver, per segment
    output_ns_per_kb: int = 0  # checksum + copy to the interface, per payload KB
    input_ns_per_packet: int = 0  # interrupt + ip_input + tcp_input, per segment
    input_ns_per_kb: int = 0  # copy from the interface + checksum, per payload KB
    rx_fifo_bytes: int | None = None  # receive interface buffer; frames wait here for input
    input_jitter_ns: int = 0  # interrupt latency varies: uniform 0..jitter added per input (seeded)

    def write_ns(self, n: int) -> int:
        return n * self.write_copy_ns_per_kb // 1024

    def read_ns(self, n: int) -> int:
        return n * self.read_copy_ns_per_kb // 1024

    def output_ns(self, payload: int) -> int:
        return self.output_ns_per_packet + payload * self.output_ns_per_kb // 1024

    def input_ns(self, payload: int) -> int:
        return self.input_ns_per_packet + payload * self.input_ns_per_kb // 1024


FREE = HostCost()

# Sun IPX (SPARC, 40 MHz) with a FORE ATM card under SunOS 4.1.1, calibrated once against the
# normal cells of Moldeklev table 1 and then used for every cell of both tables:
# - per-packet costs 100 us each way; per-KB: write copy 100 us, output (checksum + PIO to the
#   card) 70 us, input (PIO from the card + checksum) 200 us, read copy 170 us; so the receiver
#   bounds throughput near 21 Mbit/s and a 4 KB stop-and-wait round trip takes ~2.4 ms;
# - the receiving interface holds 28 KB of frames waiting for input, with up to 0.3 ms interrupt
#   latency: bursts of three 9204-byte segments (a 48 KB window opened by the 35 % rule after
#   three 8 KB reads) overflow it now and then (Moldeklev 3.1: "cell loss -> packet loss").
SUN_IPX = HostCost(
    write_copy_ns_per_kb=100_000,
    read_copy_ns_per_kb=170_000,
    output_ns_per_packet=100_000,
    output_ns_per_kb=70_000,
    input_ns_per_packet=100_000,
    input_ns_per_kb=200_000,
    rx_fifo_bytes=28_672,
    input_jitter_ns=300_000,
)

COST_MODELS: dict[str, HostCost] = {"free": FREE, "sun_ipx": SUN_IPX}
