//! Hand-built capture bytes for tests: pcap files and pcapng blocks in either byte order.
#![allow(dead_code)]

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Order {
    Le,
    Be,
}

pub struct W {
    pub order: Order,
    pub out: Vec<u8>,
}

impl W {
    pub fn new(order: Order) -> W {
        W { order, out: Vec::new() }
    }
    pub fn u16(&mut self, v: u16) -> &mut W {
        let b = if self.order == Order::Le { v.to_le_bytes() } else { v.to_be_bytes() };
        self.out.extend_from_slice(&b);
        self
    }
    pub fn u32(&mut self, v: u32) -> &mut W {
        let b = if self.order == Order::Le { v.to_le_bytes() } else { v.to_be_bytes() };
        self.out.extend_from_slice(&b);
        self
    }
    pub fn u64(&mut self, v: u64) -> &mut W {
        let b = if self.order == Order::Le { v.to_le_bytes() } else { v.to_be_bytes() };
        self.out.extend_from_slice(&b);
        self
    }
    pub fn bytes(&mut self, b: &[u8]) -> &mut W {
        self.out.extend_from_slice(b);
        self
    }
    /// Zero padding to a multiple of 4.
    pub fn pad(&mut self) -> &mut W {
        while !self.out.len().is_multiple_of(4) {
            self.out.push(0);
        }
        self
    }
}

/// One packet to write: (seconds, nanoseconds, original length, captured bytes).
#[derive(Clone, Debug)]
pub struct Pkt {
    pub sec: u32,
    pub nsec: u32,
    pub origlen: u32,
    pub data: Vec<u8>,
}

pub fn sample_packets() -> Vec<Pkt> {
    (0..5u32)
        .map(|i| Pkt {
            sec: 1_700_000_000 + i,
            nsec: 123_456_000 + i * 1000,
            origlen: 60 + i * 7,
            data: (0..(40 + i * 7)).map(|b| (b as u8).wrapping_mul(31).wrapping_add(i as u8)).collect(),
        })
        .collect()
}

pub fn pcap_header(order: Order, ns: bool, version: (u16, u16), snaplen: u32, linktype_field: u32) -> Vec<u8> {
    let mut w = W::new(order);
    w.u32(if ns { 0xa1b2_3c4d } else { 0xa1b2_c3d4 })
        .u16(version.0)
        .u16(version.1)
        .u32(0)
        .u32(0)
        .u32(snaplen)
        .u32(linktype_field);
    w.out
}

pub fn pcap_record(order: Order, sec: u32, frac: u32, caplen: u32, origlen: u32, data: &[u8]) -> Vec<u8> {
    let mut w = W::new(order);
    w.u32(sec).u32(frac).u32(caplen).u32(origlen).bytes(data);
    w.out
}

pub fn pcap_file(order: Order, ns: bool, pkts: &[Pkt]) -> Vec<u8> {
    let mut out = pcap_header(order, ns, (2, 4), 65535, 1);
    for p in pkts {
        let frac = if ns { p.nsec } else { p.nsec / 1000 };
        out.extend(pcap_record(order, p.sec, frac, p.data.len() as u32, p.origlen, &p.data));
    }
    out
}

/// An option: code, length, value, padding.
pub fn opt(order: Order, code: u16, value: &[u8]) -> Vec<u8> {
    let mut w = W::new(order);
    w.u16(code).u16(value.len() as u16).bytes(value).pad();
    w.out
}

pub fn opt_end(order: Order) -> Vec<u8> {
    opt(order, 0, &[])
}

/// A whole block: type, total length, body (padded), total length.
pub fn block(order: Order, btype: u32, body: &[u8]) -> Vec<u8> {
    let mut b = W::new(order);
    b.bytes(body).pad();
    let len = 12 + b.out.len() as u32;
    let mut w = W::new(order);
    w.u32(btype).u32(len).bytes(&b.out).u32(len);
    w.out
}

pub fn shb(order: Order, version: (u16, u16), options: &[u8]) -> Vec<u8> {
    let mut w = W::new(order);
    w.u32(0x1a2b_3c4d).u16(version.0).u16(version.1).u64(u64::MAX).bytes(options);
    block(order, 0x0a0d_0d0a, &w.out)
}

pub fn idb(order: Order, linktype: u16, snaplen: u32, options: &[u8]) -> Vec<u8> {
    let mut w = W::new(order);
    w.u16(linktype).u16(0).u32(snaplen).bytes(options);
    block(order, 1, &w.out)
}

pub fn epb(order: Order, iface: u32, ts: u64, origlen: u32, data: &[u8], options: &[u8]) -> Vec<u8> {
    let mut w = W::new(order);
    w.u32(iface).u32((ts >> 32) as u32).u32(ts as u32).u32(data.len() as u32).u32(origlen).bytes(data).pad();
    w.bytes(options);
    block(order, 6, &w.out)
}

pub fn opb(order: Order, iface: u16, drops: u16, ts: u64, origlen: u32, data: &[u8], options: &[u8]) -> Vec<u8> {
    let mut w = W::new(order);
    w.u16(iface).u16(drops).u32((ts >> 32) as u32).u32(ts as u32).u32(data.len() as u32).u32(origlen);
    w.bytes(data).pad().bytes(options);
    block(order, 2, &w.out)
}

pub fn spb(order: Order, origlen: u32, data: &[u8]) -> Vec<u8> {
    let mut w = W::new(order);
    w.u32(origlen).bytes(data);
    block(order, 3, &w.out)
}

pub fn isb(order: Order, iface: u32, ts: u64, options: &[u8]) -> Vec<u8> {
    let mut w = W::new(order);
    w.u32(iface).u32((ts >> 32) as u32).u32(ts as u32).bytes(options);
    block(order, 5, &w.out)
}

/// The sample packets as one pcapng section with a nanosecond interface.
pub fn pcapng_file(order: Order, pkts: &[Pkt]) -> Vec<u8> {
    let mut out = shb(order, (1, 0), &[]);
    let mut opts = opt(order, 9, &[9]);
    opts.extend(opt_end(order));
    out.extend(idb(order, 1, 65535, &opts));
    for p in pkts {
        let ts = p.sec as u64 * 1_000_000_000 + p.nsec as u64;
        out.extend(epb(order, 0, ts, p.origlen, &p.data, &[]));
    }
    out
}
