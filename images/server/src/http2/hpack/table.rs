//! HPACK's indexing tables (RFC 7541 §2.3): the static table of Appendix A and the decoder's dynamic table.
//!
//! The dynamic table keeps names and values in one byte buffer, appended at the end and evicted from the
//! front; when the buffer would outgrow twice the table size the live bytes move back to its start. So a
//! connection that uses its table never allocates after the buffer reached its size, and an idle one that
//! never used it holds nothing.

use std::collections::VecDeque;

/// RFC 7541 Appendix A, index 1..=61 at 0..=60.
pub const STATIC: [(&[u8], &[u8]); 61] = [
    (b":authority", b""),
    (b":method", b"GET"),
    (b":method", b"POST"),
    (b":path", b"/"),
    (b":path", b"/index.html"),
    (b":scheme", b"http"),
    (b":scheme", b"https"),
    (b":status", b"200"),
    (b":status", b"204"),
    (b":status", b"206"),
    (b":status", b"304"),
    (b":status", b"400"),
    (b":status", b"404"),
    (b":status", b"500"),
    (b"accept-charset", b""),
    (b"accept-encoding", b"gzip, deflate"),
    (b"accept-language", b""),
    (b"accept-ranges", b""),
    (b"accept", b""),
    (b"access-control-allow-origin", b""),
    (b"age", b""),
    (b"allow", b""),
    (b"authorization", b""),
    (b"cache-control", b""),
    (b"content-disposition", b""),
    (b"content-encoding", b""),
    (b"content-language", b""),
    (b"content-length", b""),
    (b"content-location", b""),
    (b"content-range", b""),
    (b"content-type", b""),
    (b"cookie", b""),
    (b"date", b""),
    (b"etag", b""),
    (b"expect", b""),
    (b"expires", b""),
    (b"from", b""),
    (b"host", b""),
    (b"if-match", b""),
    (b"if-modified-since", b""),
    (b"if-none-match", b""),
    (b"if-range", b""),
    (b"if-unmodified-since", b""),
    (b"last-modified", b""),
    (b"link", b""),
    (b"location", b""),
    (b"max-forwards", b""),
    (b"proxy-authenticate", b""),
    (b"proxy-authorization", b""),
    (b"range", b""),
    (b"referer", b""),
    (b"refresh", b""),
    (b"retry-after", b""),
    (b"server", b""),
    (b"set-cookie", b""),
    (b"strict-transport-security", b""),
    (b"transfer-encoding", b""),
    (b"user-agent", b""),
    (b"vary", b""),
    (b"via", b""),
    (b"www-authenticate", b""),
];

/// The static index (1-based) whose name is `name`, if any.
pub fn static_name_index(name: &[u8]) -> Option<usize> {
    STATIC.iter().position(|(n, _)| *n == name).map(|i| i + 1)
}

/// The static index of the exact pair, if any.
pub fn static_pair_index(name: &[u8], value: &[u8]) -> Option<usize> {
    STATIC.iter().position(|(n, v)| *n == name && *v == value).map(|i| i + 1)
}

/// RFC 7541 §4.1: an entry's size counts 32 bytes of overhead.
pub const ENTRY_OVERHEAD: usize = 32;

#[derive(Clone, Copy)]
struct Entry {
    /// Offset of the name in `buf` (absolute, before subtracting `head`).
    at: usize,
    name: u32,
    value: u32,
}

/// The decoder's dynamic table.
#[derive(Default)]
pub struct Dynamic {
    buf: Vec<u8>,
    /// Bytes of `buf` before this are evicted.
    head: usize,
    /// Newest at the back.
    entries: VecDeque<Entry>,
    /// Sum of entry sizes (§4.1).
    size: usize,
    /// The current maximum (changed by size updates, at most `limit`).
    max: usize,
}

impl Dynamic {
    pub fn new(max: usize) -> Dynamic {
        Dynamic { max, ..Dynamic::default() }
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    pub fn size(&self) -> usize {
        self.size
    }

    /// Heap bytes held (for the memory accounting of idle connections).
    pub fn heap_bytes(&self) -> usize {
        self.buf.capacity() + self.entries.capacity() * std::mem::size_of::<Entry>()
    }

    /// Entry `i` (0 = newest) as (name, value).
    pub fn get(&self, i: usize) -> Option<(&[u8], &[u8])> {
        let e = *self.entries.get(self.entries.len().checked_sub(i + 1)?)?;
        let live = &self.buf[e.at..];
        Some((&live[..e.name as usize], &live[e.name as usize..(e.name + e.value) as usize]))
    }

    /// A dynamic table size update (§6.3); the caller has checked it against the SETTINGS limit.
    pub fn set_max(&mut self, max: usize) {
        self.max = max;
        self.evict_to(max);
    }

    fn evict_to(&mut self, target: usize) {
        while self.size > target {
            let e = self.entries.pop_front().expect("size > 0 means an entry");
            self.size -= e.name as usize + e.value as usize + ENTRY_OVERHEAD;
            self.head = e.at + (e.name + e.value) as usize;
        }
        if self.entries.is_empty() {
            self.buf.clear();
            self.head = 0;
        }
    }

    /// Inserts (§4.4): evicts until it fits; an entry larger than the table empties it and is not added.
    pub fn insert(&mut self, name: &[u8], value: &[u8]) {
        let sz = name.len() + value.len() + ENTRY_OVERHEAD;
        if sz > self.max {
            self.evict_to(0);
            return;
        }
        self.evict_to(self.max - sz);
        let need = name.len() + value.len();
        if self.buf.len() + need > 2 * self.max.max(64) && self.head > 0 {
            // Compact: drop the evicted prefix and rebase the live entries.
            self.buf.drain(..self.head);
            for e in self.entries.iter_mut() {
                e.at -= self.head;
            }
            self.head = 0;
        }
        let at = self.buf.len();
        self.buf.extend_from_slice(name);
        self.buf.extend_from_slice(value);
        self.entries.push_back(Entry { at, name: name.len() as u32, value: value.len() as u32 });
        self.size += sz;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn static_table_ends() {
        assert_eq!(STATIC[0].0, b":authority");
        assert_eq!(STATIC[60].0, b"www-authenticate");
        assert_eq!(static_pair_index(b":status", b"304"), Some(11));
        assert_eq!(static_name_index(b"content-type"), Some(31));
    }

    #[test]
    fn insert_evict_compact() {
        let mut t = Dynamic::new(100);
        t.insert(b"aaaa", b"1111"); // 40
        t.insert(b"bbbb", b"2222"); // 80
        assert_eq!(t.get(0), Some((&b"bbbb"[..], &b"2222"[..])));
        assert_eq!(t.get(1), Some((&b"aaaa"[..], &b"1111"[..])));
        t.insert(b"cccc", b"3333"); // evicts aaaa
        assert_eq!(t.len(), 2);
        assert_eq!(t.size(), 80);
        assert_eq!(t.get(1), Some((&b"bbbb"[..], &b"2222"[..])));
        for i in 0..1000u32 {
            let v = i.to_string();
            t.insert(b"k", v.as_bytes());
            assert_eq!(t.get(0).unwrap().1, v.as_bytes());
        }
        // The buffer stays bounded by compaction.
        assert!(t.buf.capacity() <= 4 * 100 + 64 * 4);
        t.insert(&[b'x'; 90], b"");
        assert!(t.is_empty());
        t.set_max(0);
        assert_eq!(t.size(), 0);
    }
}
