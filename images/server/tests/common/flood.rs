//! What the memory flood tests (hostile_memory.rs, conn_memory.rs) start from: a memory cgroup of their own, the
//! test site, a TLS certificate, and a file descriptor limit raised for thousands of sockets.

use super::cgroup::{skip, MemCgroup};
use super::tls::{make_ca, make_leaf};
use super::{make_site, tempdir, Site};
/// Lets this process hold the thousands of sockets a flood needs (the server's own wrapper: soft limit to hard).
use hyperstatic_server::sys::process::raise_fd_limit;

/// What each flood test starts from: a memory cgroup of `limit`, the test site, and a TLS certificate for it
/// (with the CA a client trusts). The temp dirs live as long as the value: bind `_certs`, not `..`, or the
/// certificate directory is gone before the server reads it.
pub struct FloodSetup {
    pub group: MemCgroup,
    pub site: Site,
    pub _certs: Site,
    pub ca: std::path::PathBuf,
    pub crt: String,
    pub key: String,
}

/// None (after saying why) where no writable memory cgroup exists: `skip` fails under CI=true.
pub fn flood_setup(name: &str, test: &str, limit: u64) -> Option<FloodSetup> {
    let group = match MemCgroup::create(&format!("hyperstatic-{name}"), limit) {
        Ok(g) => g,
        Err(why) => {
            skip(test, &why);
            return None;
        }
    };
    raise_fd_limit();
    let site = make_site(name);
    let certs = tempdir(&format!("{name}-certs"));
    let ca = make_ca(&certs);
    let (crt, key) = make_leaf(&certs, "leaf", 30);
    let (crt, key) = (crt.display().to_string(), key.display().to_string());
    Some(FloodSetup { group, site, _certs: certs, ca, crt, key })
}
