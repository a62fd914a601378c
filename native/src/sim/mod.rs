//! The native reference simulator: a statement-by-statement port of simulate/ (the Python stays
//! the readable reference; tests/test_native_sim_differential.py holds the two identical).
pub mod app;
pub mod atm;
pub mod engine;
pub mod ground_truth;
pub mod link;
pub mod loss;
pub mod naglemark;
pub mod nagle;
pub mod net;
pub mod nic;
pub mod pmtu;
pub mod rng;
pub mod segment;
pub mod stage;
pub mod tcp;
pub mod world;
