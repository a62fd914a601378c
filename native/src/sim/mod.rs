//! The reference simulator: a discrete-event model of TCP connections between simulated hosts,
//! reproducing the stalls of the papers the project is built from (Mogul & Minshall, Moldeklev &
//! Gunningberg, Kung & Morris, GigaTCP, Salamon) with the rules of docs/tcp-rules.md, and
//! recording what a capture would show along with the ground truth of every stall.
//!
//! - `engine`: the event queue (integer nanoseconds, ties in scheduling order).
//! - `rng`: the run's seeded MT19937, so a seed gives the same run everywhere.
//! - `tcp`: one end host and its connection, per stack personality (output, input, timers,
//!   delayed ACKs, congestion control, SACK, CPU cost, the stall ground truth).
//! - `nagle`: the Nagle variants of RFC 896 and Mogul & Minshall as one decision.
//! - `app`: the applications (bulk writer and reader; the naglemark dispatch).
//! - `link`: one direction of a point-to-point link and the named link presets.
//! - `stage`, `atm`, `pmtu`, `nic`: the path's impairments (loss models, the ATM switch port,
//!   a smaller-MTU hop, the receiver's jumbo slots).
//! - `loss`: which loss a retransmission timeout followed, from the drop log.
//! - `segment`, `ground_truth`: what travels and what a run records (stalls, drops).
//! - `net`: everything of a run but the hosts (queue, links, stages, taps, drop log).
//! - `world`: a bulk run; `naglemark`: a naglemark trial (Mogul & Minshall sections 6-7).
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
