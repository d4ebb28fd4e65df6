//! A decoded header list, kept as one byte buffer plus offsets so that decoding a request allocates nothing
//! once the buffers have grown to the connection's usual size.

/// RFC 7541 §4.1 / RFC 9113 §6.5.2: a field costs its name and value plus 32 bytes against
/// SETTINGS_MAX_HEADER_LIST_SIZE.
pub const FIELD_OVERHEAD: usize = 32;

#[derive(Clone, Copy, Debug)]
struct Field {
    at: u32,
    name: u32,
    value: u32,
}

/// Decoded fields in order, bounded by a header-list size. A list that would exceed the bound keeps the fields
/// that fit and says `overflowed()`; decoding goes on so the HPACK state stays in step with the peer.
#[derive(Default)]
pub struct FieldList {
    bytes: Vec<u8>,
    fields: Vec<Field>,
    size: usize,
    limit: usize,
    overflow: bool,
}

impl FieldList {
    pub fn new(limit: usize) -> FieldList {
        FieldList { limit, ..FieldList::default() }
    }

    /// Empties the list, keeping its buffers.
    pub fn clear(&mut self) {
        self.bytes.clear();
        self.fields.clear();
        self.size = 0;
        self.overflow = false;
    }

    /// Frees the buffers (for a connection going idle).
    pub fn release(&mut self) {
        *self = FieldList::new(self.limit);
    }

    /// Exchanges buffers with `other` (emptied first), each keeping its own limit: lending reusable capacity
    /// between connections without allocating.
    pub fn swap_buffers(&mut self, other: &mut FieldList) {
        self.clear();
        other.clear();
        std::mem::swap(&mut self.bytes, &mut other.bytes);
        std::mem::swap(&mut self.fields, &mut other.fields);
    }

    pub fn heap_bytes(&self) -> usize {
        self.bytes.capacity() + self.fields.capacity() * std::mem::size_of::<Field>()
    }

    pub fn overflowed(&self) -> bool {
        self.overflow
    }

    /// The RFC size of what was decoded, including fields dropped by overflow.
    pub fn size(&self) -> usize {
        self.size
    }

    pub fn len(&self) -> usize {
        self.fields.len()
    }

    pub fn is_empty(&self) -> bool {
        self.fields.is_empty()
    }

    pub fn get(&self, i: usize) -> (&[u8], &[u8]) {
        let f = self.fields[i];
        let at = f.at as usize;
        let n = at + f.name as usize;
        (&self.bytes[at..n], &self.bytes[n..n + f.value as usize])
    }

    pub fn iter(&self) -> impl Iterator<Item = (&[u8], &[u8])> + '_ {
        (0..self.fields.len()).map(|i| self.get(i))
    }

    /// Starts a field: the decoder appends the name, then calls `mark_value`, appends the value, then `commit`.
    pub(crate) fn begin(&mut self) -> usize {
        self.bytes.len()
    }

    pub(crate) fn buf(&mut self) -> &mut Vec<u8> {
        &mut self.bytes
    }

    /// The field appended since `begin` returned `at`, whose name is `name_len` bytes; returns (name, value)
    /// for the dynamic table, then `commit` or `drop_pending` decides whether it stays.
    pub(crate) fn pending(&self, at: usize, name_len: usize) -> (&[u8], &[u8]) {
        (&self.bytes[at..at + name_len], &self.bytes[at + name_len..])
    }

    /// Keeps the pending field if the list stays within its limit; otherwise drops it and marks overflow.
    pub(crate) fn commit(&mut self, at: usize, name_len: usize) {
        let value_len = self.bytes.len() - at - name_len;
        self.size += name_len + value_len + FIELD_OVERHEAD;
        if self.size > self.limit || self.overflow {
            self.overflow = true;
            self.bytes.truncate(at);
            return;
        }
        self.fields.push(Field { at: at as u32, name: name_len as u32, value: value_len as u32 });
    }

    /// The bound the list keeps to (SETTINGS_MAX_HEADER_LIST_SIZE).
    pub(crate) fn limit(&self) -> usize {
        self.limit
    }

    /// Whether a field of `len` name and value bytes would be kept: the decoder asks before it copies one.
    #[inline]
    pub(crate) fn fits(&self, len: usize) -> bool {
        !self.overflow && self.size + len + FIELD_OVERHEAD <= self.limit
    }

    /// A field of `len` name and value bytes that is not kept: only its size is added (an overflowed list is
    /// counted, never copied).
    #[inline]
    pub(crate) fn count(&mut self, len: usize) {
        self.size += len + FIELD_OVERHEAD;
        self.overflow = true;
    }

    /// Drops what was appended since `begin` returned `at` and counts it, with `uncopied` more bytes (a name the
    /// decoder did not copy), as a field not kept.
    pub(crate) fn count_pending(&mut self, at: usize, uncopied: usize) {
        let len = self.bytes.len() - at + uncopied;
        self.bytes.truncate(at);
        self.count(len);
    }

    /// A list nobody will read (a stream refused or ignored before its block is decoded): from now on every
    /// field is counted, none copied.
    pub fn count_only(&mut self) {
        self.overflow = true;
    }
}
