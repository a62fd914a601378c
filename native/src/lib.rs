//! stallscope's native core: capture containers (pcap, pcapng) -> TCP packet columns.
//! `lib.rs` only declares modules and, behind the `python` feature, binds them.
#![deny(unsafe_code)]

pub mod flows;
pub mod packet;
pub mod record;
