//! The host processing-cost model: simulate/tcp/costs.py.

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

/// Sun IPX with a FORE ATM card under SunOS 4.1.1 (costs.py explains the calibration).
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

/// COST_MODELS by name.
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
    fn per_kb_costs_round_down_like_python() {
        assert_eq!(SUN_IPX.output_ns(9204), 100_000 + 9204 * 70_000 / 1024);
        assert_eq!(SUN_IPX.write_ns(4096), 400_000);
        assert_eq!(SUN_IPX.read_ns(1), 166);
        assert_eq!(FREE.input_ns(9204), 0);
        assert_eq!(cost_model("sun_ipx"), Some(SUN_IPX));
        assert!(cost_model("vax").is_none());
    }
}
