//! The host processing-cost model: CPU time per packet and per KB. Application copies (sosend,
//! soreceive) run at process level and are pre-empted by kernel work (tcp_input, tcp_output and
//! the driver), which runs in order on one kernel timeline. Per-KB costs round down to whole ns.

#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
pub struct HostCost {
    pub write_copy_ns_per_kb: i64,
    pub read_copy_ns_per_kb: i64,
    pub output_ns_per_packet: i64,
    pub output_ns_per_kb: i64,
    pub input_ns_per_packet: i64,
    pub input_ns_per_kb: i64,
    pub rx_fifo_bytes: Option<i64>,
    pub input_jitter_ns: i64,
}

impl HostCost {
    pub fn write_ns(&self, n: i64) -> i64 {
        (n * self.write_copy_ns_per_kb).div_euclid(1024)
    }
    pub fn read_ns(&self, n: i64) -> i64 {
        (n * self.read_copy_ns_per_kb).div_euclid(1024)
    }
    pub fn output_ns(&self, payload: i64) -> i64 {
        self.output_ns_per_packet + (payload * self.output_ns_per_kb).div_euclid(1024)
    }
    pub fn input_ns(&self, payload: i64) -> i64 {
        self.input_ns_per_packet + (payload * self.input_ns_per_kb).div_euclid(1024)
    }
    /// A zero model: the host is infinitely fast.
    pub fn is_free(&self) -> bool {
        *self == FREE
    }
}

pub const FREE: HostCost = HostCost {
    write_copy_ns_per_kb: 0,
    read_copy_ns_per_kb: 0,
    output_ns_per_packet: 0,
    output_ns_per_kb: 0,
    input_ns_per_packet: 0,
    input_ns_per_kb: 0,
    rx_fifo_bytes: None,
    input_jitter_ns: 0,
};

/// Sun IPX (SPARC, 40 MHz) with a FORE ATM card under SunOS 4.1.1, calibrated once against the
/// normal cells of Moldeklev table 1 and used for every cell of both tables: the receiver bounds
/// throughput near 21 Mbit/s, a 4 KB stop-and-wait round trip takes ~2.4 ms, and bursts of three
/// 9204-byte segments now and then overflow the 28 KB receive FIFO (Moldeklev 3.1: "cell loss ->
/// packet loss").
pub const SUN_IPX: HostCost = HostCost {
    write_copy_ns_per_kb: 100_000,
    read_copy_ns_per_kb: 170_000,
    output_ns_per_packet: 100_000,
    output_ns_per_kb: 70_000,
    input_ns_per_packet: 100_000,
    input_ns_per_kb: 200_000,
    rx_fifo_bytes: Some(28_672),
    input_jitter_ns: 300_000,
};

/// A cost model by name: "free" or "sun_ipx".
pub fn cost_model(name: &str) -> Option<HostCost> {
    match name {
        "free" => Some(FREE),
        "sun_ipx" => Some(SUN_IPX),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn per_kb_costs_round_down() {
        assert_eq!(SUN_IPX.output_ns(9204), 100_000 + 9204 * 70_000 / 1024);
        assert_eq!(SUN_IPX.write_ns(4096), 400_000);
        assert_eq!(SUN_IPX.read_ns(1), 166);
        assert_eq!(FREE.input_ns(9204), 0);
        assert_eq!(cost_model("sun_ipx"), Some(SUN_IPX));
        assert!(cost_model("vax").is_none());
    }
}
