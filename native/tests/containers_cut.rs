//! Every public fixture cut at every byte offset: "N whole records + at most one typed error",
//! the records always a prefix of the full file's, N never decreasing as the cut grows, and a
//! cut inside a record reported as truncation at that record's offset.

mod containers_common;

use std::sync::Arc;

use containers_common::{project_files, public_files, read_prefix, Outcome};

/// Files up to this size are cut at every offset in the default (debug) run; larger ones at
/// their first and last 2 KiB and around every record boundary, and at every offset in the
/// ignored test (about 3 s in release, 25 s in debug).
const SMALL: usize = 16 * 1024;

fn sample_cuts(len: usize, full: &Outcome) -> Vec<usize> {
    if len <= SMALL {
        return (0..=len).collect();
    }
    let mut cuts: Vec<usize> = (0..2048).chain(len - 2048..=len).collect();
    for r in &full.records {
        let o = r.8 as usize;
        for c in [o.saturating_sub(1), o, o + 1, o + 8, o + 15, o + 16, o + 17] {
            cuts.push(c.min(len));
        }
    }
    cuts.sort_unstable();
    cuts.dedup();
    cuts
}

fn check_cuts(files: Vec<std::path::PathBuf>, all_offsets: bool) {
    for path in files {
        let data = Arc::new(std::fs::read(&path).unwrap());
        let name = path.display();
        let full = read_prefix(&data, data.len());
        let cuts = if all_offsets { (0..=data.len()).collect() } else { sample_cuts(data.len(), &full) };
        let mut last_n = 0;
        for cut in cuts {
            let o = read_prefix(&data, cut);
            let n = o.records.len();
            assert!(n >= last_n, "{name} cut at {cut}: {n} records after {last_n}");
            last_n = n;
            assert_eq!(o.records[..], full.records[..n], "{name} cut at {cut}: records differ from the full read");
            let Some(err) = &o.error else {
                continue;
            };
            if o.stats.is_none() {
                // Refused while opening: nothing read, the file header incomplete or wrong.
                let full_kind = full.error.as_ref().map_or("", |e| e.kind());
                assert!(err.rejected() || err.kind() == full_kind, "{name} cut at {cut}: {err}");
            } else if err.is_truncation() {
                assert_eq!(o.trailing_truncation, Some(err.offset()), "{name} cut at {cut}");
                assert!(err.offset() <= cut as u64, "{name} cut at {cut}: {err}");
                // The truncated record starts after every record handed out.
                if let Some(last) = o.records.last() {
                    assert!(err.offset() >= last.8 + 12, "{name} cut at {cut}: {err}");
                }
            } else {
                // A non-truncation error in a prefix must be the full file's own error.
                let full_err = full.error.as_ref().unwrap_or_else(|| panic!("{name} cut at {cut}: {err}"));
                assert_eq!(err.kind(), full_err.kind(), "{name} cut at {cut}");
                assert_eq!(err.offset(), full_err.offset(), "{name} cut at {cut}");
            }
        }
        if full.error.is_none() {
            assert_eq!(last_n, full.records.len(), "{name}");
        }
    }
}

#[test]
fn public_fixtures_cut_at_every_offset_or_every_boundary() {
    check_cuts(public_files(), false);
}

#[test]
#[ignore = "slow in debug builds: cargo test --release --test containers_cut -- --ignored"]
fn public_fixtures_cut_at_every_offset() {
    check_cuts(public_files(), true);
}

/// The project's own captures (fixtures/) change when they are regenerated, so they are cut
/// at record boundaries only, and only on request (about two minutes in release).
#[test]
#[ignore = "slow: cargo test --release --test containers_cut -- --ignored"]
fn project_fixtures_cut_around_every_record() {
    check_cuts(project_files(), false);
}
