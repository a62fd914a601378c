//! What a record holds on the wire: its link layer (`link`), IP (`ip`) and TCP (`tcp`) headers,
//! reduced to one `packet::TcpPacket` or to the reason it is not one (`outcome`). `dissect` runs
//! the layers over a record, through an overlay tunnel (`tunnel`) where one carries the TCP.

pub mod dissect;
pub mod ip;
pub mod link;
pub mod outcome;
pub mod packet;
pub mod tcp;
pub mod tunnel;
