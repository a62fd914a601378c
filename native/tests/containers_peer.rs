//! Peer check against tshark (run live, so it follows regenerated fixtures): for every capture
//! this project made (fixtures/) and every public one, the record count and the sums of
//! captured and original lengths equal tshark's. Ignored by default: it needs tshark and
//! takes ~0.5 s per file. `cargo test --test containers_peer -- --ignored`

mod containers_common;

use std::path::Path;
use std::process::Command;

use containers_common::{project_files, public_files, read_bytes};

/// (records, sum caplen, sum origlen) as tshark reports them; None when tshark refuses the file.
fn tshark(path: &Path) -> Option<(u64, u64, u64)> {
    let out = Command::new("tshark")
        .args(["-r", path.to_str().unwrap(), "-T", "fields", "-e", "frame.cap_len", "-e", "frame.len"])
        .output()
        .ok()?;
    let text = String::from_utf8_lossy(&out.stdout);
    let (mut n, mut c, mut l) = (0, 0, 0);
    for line in text.lines() {
        let mut f = line.split('\t');
        c += f.next()?.parse::<u64>().ok()?;
        l += f.next()?.parse::<u64>().ok()?;
        n += 1;
    }
    Some((n, c, l))
}

#[test]
#[ignore = "peer: runs tshark on every fixture"]
fn record_counts_and_lengths_match_tshark() {
    if Command::new("tshark").arg("--version").output().is_err() {
        return;
    }
    let mut checked = 0;
    for path in project_files().into_iter().chain(public_files()) {
        let o = read_bytes(&std::fs::read(&path).unwrap());
        if o.error.as_ref().is_some_and(|e| e.rejected() || !e.is_truncation()) {
            continue; // refused or damaged: the divergences are listed in containers_public.rs
        }
        let Some(peer) = tshark(&path) else { continue };
        let ours = (
            o.records.len() as u64,
            o.records.iter().map(|r| r.5 as u64).sum::<u64>(),
            o.records.iter().map(|r| r.6 as u64).sum::<u64>(),
        );
        assert_eq!(ours, peer, "{}", path.display());
        checked += 1;
    }
    assert!(checked > 0);
    println!("{checked} files agree with tshark");
}
