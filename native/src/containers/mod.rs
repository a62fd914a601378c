//! Capture containers: a file (or stdin, gzip recognised) read record by record. `reader` picks
//! the format and yields `record::Record`s; `pcap` and `pcapng` (a file per block type) parse
//! their formats; `stats` and `error` say what the container held and where it went wrong.

pub mod byte_order;
pub mod error;
pub mod gzip;
pub mod pcap;
pub mod pcapng;
pub mod reader;
pub mod record;
pub mod source;
pub mod stats;
