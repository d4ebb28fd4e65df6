//! Certificate material: the two PEM files read as bytes (compared to notice rotation), turned into a rustls
//! server configuration: TLS 1.3 and 1.2 only, ring's suites (all AEAD: AES-GCM and ChaCha20-Poly1305; rustls
//! has no CBC or RC4 suites at all), ALPN `h2` (with --http2) and `http/1.1`, resumption through tickets and a session cache shared by
//! every configuration this process builds (so sessions survive a certificate rotation).

use std::path::Path;
use std::sync::Arc;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::{ProducesTickets, ServerSessionMemoryCache, StoresServerSessions};
use rustls::ServerConfig;

use crate::config::TlsFiles;

/// Sessions kept for ID-based resumption (TLS 1.2 clients without ticket support): about 100 KB at most.
const SESSION_CACHE_ENTRIES: usize = 1024;

/// The PEM files' bytes as read.
#[derive(Clone, PartialEq, Eq, Default)]
pub struct Material {
    pub cert: Vec<u8>,
    pub key: Vec<u8>,
}

/// What makes resumption work across configurations: the ticket key rotator and the session cache.
pub struct Resumption {
    ticketer: Arc<dyn ProducesTickets>,
    cache: Arc<dyn StoresServerSessions>,
}

impl Resumption {
    pub fn new() -> Result<Resumption, String> {
        let ticketer =
            rustls::crypto::ring::Ticketer::new().map_err(|e| format!("cannot create the session ticketer: {e}"))?;
        Ok(Resumption { ticketer, cache: ServerSessionMemoryCache::new(SESSION_CACHE_ENTRIES) })
    }
}

/// A configuration ready to publish, and its leaf certificate's validity (Unix seconds).
pub struct Built {
    pub config: Arc<ServerConfig>,
    pub not_before: i64,
    pub not_after: i64,
}

impl Built {
    /// Whether the leaf certificate is valid at `now` (Unix seconds). A rotation to a certificate that is not is
    /// refused (watch.rs): every client would reject it, while the one serving may still be good.
    pub fn valid_at(&self, now: i64) -> Result<(), String> {
        if now < self.not_before {
            return Err(format!(
                "the certificate is not valid yet (notBefore {})",
                crate::dates::format_string(self.not_before)
            ));
        }
        if now >= self.not_after {
            return Err(format!("the certificate expired (notAfter {})", crate::dates::format_string(self.not_after)));
        }
        Ok(())
    }
}

fn read(flag: &str, p: &Path) -> Result<Vec<u8>, String> {
    std::fs::read(p).map_err(|e| format!("{flag} {}: {e}", p.display()))
}

pub fn read_files(f: &TlsFiles) -> Result<Material, String> {
    Ok(Material { cert: read("--tls-cert", &f.cert)?, key: read("--tls-key", &f.key)? })
}

/// The first load (at start and for `--check`): the files read, the configuration built, fresh resumption state.
pub fn load(f: &TlsFiles) -> Result<(Material, Built, Resumption), String> {
    let r = Resumption::new()?;
    let m = read_files(f)?;
    let b = build(f, &m, &r)?;
    Ok((m, b, r))
}

/// Parses and checks the material (the key must match the leaf certificate); error messages name the file.
pub fn build(f: &TlsFiles, m: &Material, r: &Resumption) -> Result<Built, String> {
    let cert_err = |what: &dyn std::fmt::Display| format!("--tls-cert {}: {what}", f.cert.display());
    let key_err = |what: &dyn std::fmt::Display| format!("--tls-key {}: {what}", f.key.display());
    let chain: Vec<CertificateDer<'static>> = CertificateDer::pem_slice_iter(&m.cert)
        .collect::<Result<_, _>>()
        .map_err(|e| cert_err(&format_args!("not a PEM certificate chain ({e})")))?;
    if chain.is_empty() {
        return Err(cert_err(&"no CERTIFICATE block found"));
    }
    let (not_before, not_after) =
        super::der::validity(&chain[0]).ok_or_else(|| cert_err(&"the first certificate is not X.509"))?;
    let key =
        PrivateKeyDer::from_pem_slice(&m.key).map_err(|e| key_err(&format_args!("no usable PEM private key ({e})")))?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = ServerConfig::builder_with_provider(provider)
        .with_protocol_versions(&[&rustls::version::TLS13, &rustls::version::TLS12])
        .map_err(|e| format!("TLS configuration: {e}"))?
        .with_no_client_auth()
        .with_single_cert(chain, key)
        .map_err(|e| match e {
            rustls::Error::InconsistentKeys(_) => {
                key_err(&format_args!("does not match the certificate in --tls-cert {}", f.cert.display()))
            }
            e => key_err(&format_args!("unusable with --tls-cert {} ({e})", f.cert.display())),
        })?;
    // `h2` first: rustls picks the first of ours the client also offers.
    config.alpn_protocols =
        if f.http2 { vec![b"h2".to_vec(), b"http/1.1".to_vec()] } else { vec![b"http/1.1".to_vec()] };
    config.ticketer = r.ticketer.clone();
    config.session_storage = r.cache.clone();
    Ok(Built { config: Arc::new(config), not_before, not_after })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn validity_is_checked_against_the_clock_given() {
        let config = ServerConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_no_client_auth()
            .with_cert_resolver(Arc::new(rustls::server::ResolvesServerCertUsingSni::new()));
        let b = Built { config: Arc::new(config), not_before: 1000, not_after: 2000 };
        assert!(b.valid_at(1000).is_ok() && b.valid_at(1999).is_ok());
        let early = b.valid_at(999).unwrap_err();
        assert!(early.contains("not valid yet (notBefore Thu, 01 Jan 1970 00:16:40 GMT)"), "{early}");
        let late = b.valid_at(2000).unwrap_err();
        assert!(late.contains("expired (notAfter Thu, 01 Jan 1970 00:33:20 GMT)"), "{late}");
    }
}
