//! The reference TCP host in Rust: one file per module of simulate/tcp/ (same names, same rules).
pub mod congestion;
pub mod costs;
pub mod cpu;
pub mod delack;
pub mod host;
pub mod mtu_probe;
pub mod personality;
pub mod rules;
pub mod sack;
pub mod stalls;
pub mod state;
pub mod timers;
