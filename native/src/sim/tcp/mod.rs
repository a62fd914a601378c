//! The simulated TCP host: the host itself (host.rs) and one module per rule family it applies
//! (docs/tcp-rules.md): personalities, pure per-rule decisions, delayed ACKs, congestion control,
//! SACK, timers, path MTU probing, the CPU cost model and the sender's stall ground truth.
pub mod congestion;
pub mod costs;
pub mod cpu;
pub mod delack;
pub mod host;
pub mod mtu_probe;
pub mod personality;
pub mod reader;
pub mod rules;
pub mod sack;
pub mod stalls;
pub mod state;
pub mod timers;
