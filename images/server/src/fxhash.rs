//! FxHash maps: the path maps of the content table (site/content.rs) and of the redirect rules' segment trie
//! (rules/matcher.rs). A leaf utility, so the rules below the table need not import the table for its hasher.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

/// FxHash: a fast non-cryptographic hash for short keys (paths). The table is built from the site's own
/// files (and the rules from the site value), so hash flooding by clients is not a concern (lookups only read).
#[derive(Default, Clone, Copy)]
pub struct FxHasher(u64);

impl Hasher for FxHasher {
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        const K: u64 = 0x517c_c1b7_2722_0a95;
        let mut h = self.0;
        let mut chunks = bytes.chunks_exact(8);
        for c in &mut chunks {
            let w = u64::from_le_bytes(c.try_into().unwrap());
            h = (h.rotate_left(5) ^ w).wrapping_mul(K);
        }
        for &b in chunks.remainder() {
            h = (h.rotate_left(5) ^ b as u64).wrapping_mul(K);
        }
        self.0 = h;
    }
    #[inline]
    fn finish(&self) -> u64 {
        self.0
    }
}

pub type FxMap<K, V> = HashMap<K, V, BuildHasherDefault<FxHasher>>;
