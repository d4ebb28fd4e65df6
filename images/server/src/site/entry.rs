//! One file's table entry from its loaded parts (its bodies, digest, type and the headers decided for it): the
//! header blocks of every variant, HTTP/1.1 and HTTP/2, built once. Used by the loader and, when encodings
//! arrive, by the encoder's store (compress/encodings.rs) to rebuild an entry with its new variants.

use std::sync::Arc;

use crate::compress::encoding::{self, Encoding};
use crate::headers::blocks as headers;
use crate::headers::resolved::Resolved;
use crate::site::content::{Body, FileEntry, Variant};
use crate::site::mime;

/// The ETag's opaque part: the first 80 bits of the content's SHA-256, in hex.
pub(crate) fn tag_of(d: &[u8; 32]) -> String {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    d[..10].iter().flat_map(|b| [HEX[(b >> 4) as usize] as char, HEX[(b & 15) as usize] as char]).collect()
}

/// Everything needed to build one FileEntry, computed possibly in parallel.
pub(crate) struct Loaded {
    pub url: String,
    pub content_type: mime::ContentType,
    pub mtime: i64,
    pub digest: [u8; 32],
    pub identity: (Body, u64),
    pub encoded: [Option<(Body, u64)>; encoding::COUNT],
}

/// `hdrs`: the file's headers from every source (file_headers.rs).
pub(crate) fn build_entry(hdrs: Arc<Resolved>, mut l: Loaded) -> FileEntry {
    let negotiable = l.encoded.iter().any(Option::is_some);
    if let Some(ct) = &hdrs.content_type {
        l.content_type.value = ct.clone();
    }
    let cc = hdrs.cache_control.as_str();
    let extra = &hdrs.extra;
    let (id_body, id_len) = l.identity;
    let tag = tag_of(&l.digest);
    let mk = |body: Body, len: u64, enc: Encoding| {
        let etag = format!("\"{tag}{}\"", enc.etag_suffix());
        let inputs = headers::Inputs {
            mime: &l.content_type.value,
            etag: &etag,
            last_modified: l.mtime,
            cache_control: cc,
            negotiable,
            encoding: enc,
            extra,
        };
        let (fields, head_200, fields_304) = headers::build(&inputs, len);
        let h2_200 = crate::http2::respond::variant_block(len, &fields);
        Variant {
            body,
            len,
            h2_200,
            h3_200: Default::default(),
            etag: etag.into_bytes().into_boxed_slice(),
            fields: fields.into_boxed_slice(),
            head_200: head_200.into_boxed_slice(),
            fields_304: fields_304.into_boxed_slice(),
        }
    };
    let mut identity = Some((id_body, id_len));
    let mut encoded = l.encoded;
    let variants = std::array::from_fn(|i| {
        let e = encoding::ALL[i];
        let body = if e == Encoding::Identity { identity.take() } else { encoded[i].take() };
        body.map(|(b, n)| Box::new(mk(b, n, e)))
    });
    FileEntry {
        path: l.url,
        digest: l.digest,
        mime: l.content_type.value.into_boxed_str(),
        last_modified: l.mtime,
        variants,
        headers: hdrs,
    }
}
