//! Records grouped by site (`Sites`, with its fast `FxHasher` keys and `Slot`s) and API
//! errors grouped by (error, API) (`ApiErrors`): shared by the text and the XML readers.
//!
//! Must not: allocate for a record that joins an existing group, or keep more groups than
//! the caps allow (records past them are only counted).

use super::caps::{MAX_API_ERRORS, MAX_HOST_FRAMES, MAX_SITES};
use super::fields::clip;
use crate::findings::{ApiError, Dim3, Evidence, Fault};
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

/// A small, fast, non-cryptographic hasher (FxHash) for site keys: the hot path hashes one
/// key per record, and these keys come from local logs.
#[derive(Default, Clone, Copy)]
pub(crate) struct FxHasher(u64);

pub(super) const FX_K: u64 = 0x517c_c1b7_2722_0a95;

impl Hasher for FxHasher {
    fn write(&mut self, bytes: &[u8]) {
        let mut h = self.0;
        let mut chunks = bytes.chunks_exact(8);
        for c in &mut chunks {
            let w = u64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]);
            h = (h.rotate_left(5) ^ w).wrapping_mul(FX_K);
        }
        for &b in chunks.remainder() {
            h = (h.rotate_left(5) ^ u64::from(b)).wrapping_mul(FX_K);
        }
        self.0 = h;
    }

    fn finish(&self) -> u64 {
        self.0
    }
}

/// Where a record's site stands among the groups seen so far.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Slot {
    /// An existing group, by index.
    Known(usize),
    /// A new site, and there is room for it.
    New,
    /// A new site, but [`MAX_SITES`] groups exist already.
    Full,
}

/// Records grouped by site, in order of first appearance.
#[derive(Default)]
pub(crate) struct Sites {
    pub(super) index: HashMap<Box<[u8]>, usize, BuildHasherDefault<FxHasher>>,
    pub(super) keys: Vec<Box<[u8]>>,
    pub(super) faults: Vec<Fault>,
    pub(super) last: Option<usize>,
    /// Records at sites beyond [`MAX_SITES`].
    pub(super) other: u64,
    /// Whether some site's host or device stack was cut to the cap.
    pub(super) frames_cut: bool,
}

impl Sites {
    /// Looks a site key up without allocating. Consecutive records of one site (the usual
    /// case) cost one comparison.
    pub(crate) fn find(&mut self, key: &[u8]) -> Slot {
        if let Some(i) = self.last {
            if self.keys.get(i).is_some_and(|k| &**k == key) {
                return Slot::Known(i);
            }
        }
        if let Some(&i) = self.index.get(key) {
            self.last = Some(i);
            return Slot::Known(i);
        }
        if self.faults.len() >= MAX_SITES {
            Slot::Full
        } else {
            Slot::New
        }
    }

    /// Counts one more record of group `i`.
    pub(crate) fn hit(&mut self, i: usize, block: Option<Dim3>, thread: Option<Dim3>) {
        if let Some(f) = self.faults.get_mut(i) {
            f.count = f.count.saturating_add(1);
            widen(&mut f.block_range, block);
            widen(&mut f.thread_range, thread);
        }
    }

    /// Starts a new group from its first record (`count`, ranges, block and thread are set here).
    pub(crate) fn add(&mut self, key: &[u8], mut fault: Fault, block: Option<Dim3>, thread: Option<Dim3>) {
        if self.faults.len() >= MAX_SITES {
            self.other = self.other.saturating_add(1);
            return;
        }
        fault.count = 1;
        fault.block = block;
        fault.thread = thread;
        fault.block_range = block.map(|b| [b, b]);
        fault.thread_range = thread.map(|t| [t, t]);
        let i = self.faults.len();
        self.faults.push(fault);
        let k: Box<[u8]> = key.into();
        self.keys.push(k.clone());
        self.index.insert(k, i);
        self.last = Some(i);
    }

    /// Counts `n` more into group `i` (a racecheck analysis record stands for many hazards).
    pub(crate) fn add_count(&mut self, i: usize, n: u64) {
        if let Some(f) = self.faults.get_mut(i) {
            f.count = f.count.saturating_add(n);
        }
    }

    /// The groups so far.
    pub(crate) fn len(&self) -> usize {
        self.faults.len()
    }

    /// Counts a record at a site beyond the cap.
    pub(crate) fn skip(&mut self) {
        self.other = self.other.saturating_add(1);
    }

    pub(crate) fn note_frames_cut(&mut self) {
        self.frames_cut = true;
    }

    /// Records grouped so far, over all sites (including those beyond the cap).
    pub(crate) fn records(&self) -> u64 {
        self.faults.iter().map(|f| f.count).fold(self.other, u64::saturating_add)
    }

    /// Moves the groups into `ev`, with notes on what was capped.
    pub(crate) fn finish(&mut self, ev: &mut Evidence) {
        ev.faults.append(&mut self.faults);
        if self.other > 0 {
            ev.notes.push(format!(
                "compute-sanitizer: {} record(s) at sites beyond the first {MAX_SITES} distinct \
                 sites were counted but not grouped",
                self.other
            ));
        }
        if self.frames_cut {
            ev.notes.push(format!(
                "compute-sanitizer: backtraces longer than {MAX_HOST_FRAMES} frames were cut to that length"
            ));
        }
        self.index.clear();
        self.keys.clear();
        self.last = None;
        self.other = 0;
        self.frames_cut = false;
    }
}

/// Widens a `[min, max]` range component-wise to include `v`.
pub(crate) fn widen(range: &mut Option<[Dim3; 2]>, v: Option<Dim3>) {
    let Some(v) = v else { return };
    match range {
        Some([lo, hi]) => {
            for i in 0..3 {
                lo[i] = lo[i].min(v[i]);
                hi[i] = hi[i].max(v[i]);
            }
        }
        None => *range = Some([v, v]),
    }
}

/// API errors grouped by (error, API), in order of first appearance.
#[derive(Default)]
pub(crate) struct ApiErrors {
    pub(super) list: Vec<ApiError>,
    pub(super) last: Option<usize>,
    pub(super) other: u64,
}

impl ApiErrors {
    pub(crate) fn add(&mut self, error: &str, code: Option<u32>, message: &str, api: &str) {
        let same = |e: &ApiError| e.error == error && e.api == api;
        let found = match self.last {
            Some(i) if self.list.get(i).is_some_and(same) => Some(i),
            _ => self.list.iter().position(same),
        };
        match found {
            Some(i) => {
                if let Some(e) = self.list.get_mut(i) {
                    e.count = e.count.saturating_add(1);
                }
                self.last = Some(i);
            }
            None if self.list.len() < MAX_API_ERRORS => {
                self.list.push(ApiError {
                    api: clip(api).to_string(),
                    error: clip(error).to_string(),
                    code,
                    message: clip(message).to_string(),
                    count: 1,
                });
                self.last = Some(self.list.len() - 1);
            }
            None => self.other = self.other.saturating_add(1),
        }
    }

    pub(crate) fn finish(&mut self, ev: &mut Evidence) {
        ev.api_errors.append(&mut self.list);
        if self.other > 0 {
            ev.notes.push(format!(
                "compute-sanitizer: {} API error(s) beyond the first {MAX_API_ERRORS} distinct \
                 (error, API) pairs were not kept",
                self.other
            ));
        }
        self.other = 0;
        self.last = None;
    }
}
