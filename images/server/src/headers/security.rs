//! The default security headers (`--security-headers`). Only headers that no ordinary static site depends on
//! the absence of: MIME sniffing off, the referrer cut to the origin across sites, and the powerful device and
//! payment features off. No Content-Security-Policy: a default one breaks sites (inline scripts and styles,
//! third-party assets), so a CSP is only ever the user's (`--header`, `_headers`). Any header of the same name
//! from the user replaces the default (file_headers.rs).

pub const DEFAULTS: [(&str, &str); 3] = [
    ("X-Content-Type-Options", "nosniff"),
    ("Referrer-Policy", "strict-origin-when-cross-origin"),
    ("Permissions-Policy", "camera=(), microphone=(), geolocation=(), payment=(), usb=()"),
];
