//! The index (docs/design/pools.md, "The index"): the shard files `DIR/index/*.json` the operator renders, read
//! strictly. A shard is `{"version": 1, "shard": N, "sites": [...]}`; each site `{id, hosts, value, limits,
//! content}`. An unknown field anywhere but inside `content` (the fetcher's, which the server never reads)
//! refuses the shard whole, with the JSON path of the problem; so does a bad site value (checked by the site
//! value's own parser, site_value/, so a rule is refused with the same message as in a `--site` file). A refused
//! shard keeps its previous good form: `Index::read` remembers each shard's last good sites. Across shards, a
//! site id or a host already taken by an earlier site (shards in file-name order, sites in order) refuses the
//! later site, which is reported and left out.
//!
//! Each site's `entry_revision` names its whole entry (id, hosts, value, limits, content): `sha256:` and the first
//! 16 hex digits of the SHA-256 of the entry's bytes exactly as the shard holds them. The operator renders shards
//! canonically and names each entry the same way (Go `poolindex.EntryRevision`); `/sites` reports it, so a pod
//! counts as serving a site only once everything the operator placed, hostnames included, is in effect
//! (internal/contract's pool test holds the two sides together).
//!
//! **Access files.** A value's `access.htpasswdFile` and `access.sso.keysFile` name files beside a `--site` file;
//! an index has nothing beside it. A shared pool (no `--sites-access-dir`) refuses every entry that names one:
//! its rule would refuse everyone, and the operator never places such a site in a pool. A site's own pods with
//! previews (`--sites-access-dir DIR`) read them from DIR by plain file name; their puller writes each file under
//! a name made of its content's digest (internal/contentagent), so an entry's bytes, hence its value's revision
//! (under which checked values are shared), change whenever a file's content does.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::value::RawValue;
use serde_json::{Map, Value};
use sha2::{Digest as _, Sha256};

use crate::site_value::{revision_of, Revised, SiteValue};

/// The largest shard file read (a ConfigMap holds 1 MiB).
pub const MAX_SHARD_BYTES: u64 = 2 << 20;

/// What the process brings to reading the index's values (process settings, not a site's): whether it serves TLS
/// (`SiteValue::check_process`) and where an entry's access files are (module doc; none: refused).
#[derive(Debug, Clone, Default)]
pub struct Reading {
    pub tls: bool,
    pub access_dir: Option<PathBuf>,
}

/// A site's limits (all three required in the index).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    pub max_files: u64,
    pub max_bytes: u64,
    pub requests_per_second: u64,
}

/// One site of the index.
#[derive(Debug, Clone, PartialEq)]
pub struct Site {
    pub id: String,
    /// Shared with the host map's keys (hosts.rs): one copy of each name.
    pub hosts: Box<[Arc<str>]>,
    /// The checked site value and its revision (of the value's JSON as the index holds it, re-serialised).
    pub value: Revised,
    pub limits: Limits,
    /// The revision of the whole entry's bytes (module doc): what `/sites` reports as `entryRevision`.
    pub entry_revision: String,
}

/// The index as read: the sites of every shard's last good form, and what was refused.
#[derive(Default)]
pub struct Index {
    /// By shard file name: the bytes last read, and the last good sites.
    shards: BTreeMap<String, Shard>,
    /// Checked values by revision: sites with the same value (most of a pool's: `{"version": 1}`) share one, parsed
    /// once; pruned of values no site holds after each read.
    values: Values,
}

/// Site values by revision, shared between the sites that have the same one.
pub type Values = HashMap<String, Arc<SiteValue>>;

struct Shard {
    /// SHA-256 of the bytes last read: an unchanged shard is not parsed again (its bytes are not kept: a few
    /// hundred per site).
    digest: [u8; 32],
    good: Option<Vec<Arc<Site>>>,
    refused: Option<String>,
}

/// What a read gives: the sites in effect (ids unique, hosts unique; shared with the index, not copied) and the
/// problems, one line each.
pub struct Merged {
    pub sites: Vec<Arc<Site>>,
    pub problems: Vec<String>,
}

impl Index {
    /// Reads every `*.json` of `dir` (names starting with `.` are the kubelet's `..data` machinery). A shard whose
    /// bytes did not change is not parsed again; a refused one keeps its last good sites; a removed one is gone.
    pub fn read(&mut self, dir: &Path, reading: &Reading) -> Merged {
        let mut seen = Vec::new();
        let mut problems = Vec::new();
        if let Ok(rd) = std::fs::read_dir(dir) {
            for e in rd.flatten() {
                let name = e.file_name().to_string_lossy().into_owned();
                if name.starts_with('.') || !name.ends_with(".json") {
                    continue;
                }
                match read_capped(&e.path()) {
                    Ok(bytes) => {
                        self.update(&name, bytes, reading);
                        seen.push(name);
                    }
                    Err(err) => {
                        problems.push(format!("index {name}: {err}"));
                        if self.shards.contains_key(&name) {
                            seen.push(name);
                        }
                    }
                }
            }
        } else {
            problems.push(format!("index {}: cannot read the directory", dir.display()));
            seen.extend(self.shards.keys().cloned());
        }
        self.shards.retain(|k, _| seen.contains(k));
        self.values.retain(|_, v| Arc::strong_count(v) > 1);
        let mut m = self.merge();
        problems.append(&mut m.problems);
        m.problems = problems;
        m
    }

    /// Takes a shard's newest bytes (parsed only when they changed).
    pub fn update(&mut self, name: &str, bytes: Vec<u8>, reading: &Reading) {
        let digest: [u8; 32] = Sha256::digest(&bytes).into();
        if self.shards.get(name).is_some_and(|s| s.digest == digest) {
            return;
        }
        let parsed = parse_shard_with(&bytes, reading, &mut self.values);
        let prev = self.shards.remove(name).and_then(|s| s.good);
        let shard = match parsed {
            Ok(sites) => Shard { digest, good: Some(sites.into_iter().map(Arc::new).collect()), refused: None },
            Err(e) => Shard { digest, good: prev, refused: Some(e) },
        };
        self.shards.insert(name.to_string(), shard);
    }

    /// The sites of every shard's last good form, a later duplicate id or host refused.
    pub fn merge(&self) -> Merged {
        let mut sites = Vec::new();
        let mut problems = Vec::new();
        let mut ids: HashMap<String, ()> = HashMap::new();
        let mut hosts: HashMap<Arc<str>, String> = HashMap::new();
        for (name, shard) in &self.shards {
            if let Some(e) = &shard.refused {
                let keeps = if shard.good.is_some() { "its last good form keeps serving" } else { "no good form yet" };
                problems.push(format!("index {name} refused ({keeps}): {e}"));
            }
            for s in shard.good.iter().flat_map(|g| g.iter()) {
                if ids.contains_key(&s.id) {
                    problems.push(format!("index {name}: site {} refused: its id is already in the index", s.id));
                    continue;
                }
                if let Some((h, other)) = s.hosts.iter().find_map(|h| hosts.get(h).map(|o| (h, o))) {
                    problems.push(format!("index {name}: site {} refused: host {h} is already site {other}'s", s.id));
                    continue;
                }
                ids.insert(s.id.clone(), ());
                for h in &s.hosts {
                    hosts.insert(h.clone(), s.id.clone());
                }
                sites.push(s.clone());
            }
        }
        Merged { sites, problems }
    }
}

fn read_capped(p: &Path) -> Result<Vec<u8>, String> {
    use std::io::Read;
    let f = std::fs::File::open(p).map_err(|e| e.to_string())?;
    let mut b = Vec::new();
    f.take(MAX_SHARD_BYTES + 1).read_to_end(&mut b).map_err(|e| e.to_string())?;
    if b.len() as u64 > MAX_SHARD_BYTES {
        return Err(format!("larger than {MAX_SHARD_BYTES} bytes"));
    }
    Ok(b)
}

fn object<'a>(v: &'a Value, path: &str, allowed: &[&str]) -> Result<&'a Map<String, Value>, String> {
    let m =
        v.as_object().ok_or_else(|| format!("{}: expected an object", if path.is_empty() { "(top)" } else { path }))?;
    if let Some(k) = m.keys().find(|k| !allowed.contains(&k.as_str())) {
        return Err(if path.is_empty() { format!("{k}: unknown field") } else { format!("{path}.{k}: unknown field") });
    }
    Ok(m)
}

fn required<'a>(m: &'a Map<String, Value>, path: &str, key: &str) -> Result<&'a Value, String> {
    m.get(key).ok_or_else(|| format!("{}: required", join(path, key)))
}

fn join(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_string()
    } else {
        format!("{path}.{key}")
    }
}

/// Parses one shard's bytes; errors name the JSON path (`sites[1].limits.maxFiles: required`).
pub fn parse_shard(bytes: &[u8], reading: &Reading) -> Result<Vec<Site>, String> {
    parse_shard_with(bytes, reading, &mut Values::new())
}

/// `parse_shard`, taking values already checked from `values` (and adding the new ones).
fn parse_shard_with(bytes: &[u8], reading: &Reading, values: &mut Values) -> Result<Vec<Site>, String> {
    let root: Value = serde_json::from_slice(bytes).map_err(|e| format!("invalid JSON: {e}"))?;
    let top = object(&root, "", &["version", "shard", "sites"])?;
    match top.get("version") {
        Some(v) if v.as_u64() == Some(1) => {}
        Some(v) => return Err(format!("version: {v} is not a version this server reads (1)")),
        None => return Err("version: required (1)".into()),
    }
    if let Some(s) = top.get("shard") {
        s.as_u64().ok_or("shard: expected a non-negative integer")?;
    }
    let list = match top.get("sites") {
        None | Some(Value::Null) => return Ok(Vec::new()),
        Some(Value::Array(a)) => a,
        Some(_) => return Err("sites: expected an array".into()),
    };
    let raw = raw_entries(bytes)?;
    if raw.len() != list.len() {
        return Err("sites: read twice with different lengths".into());
    }
    list.iter()
        .zip(raw)
        .enumerate()
        .map(|(i, (v, r))| site(v, &format!("sites[{i}]"), reading, values, revision_of(r.get().as_bytes())))
        .collect()
}

/// Reads the value's access files from `dir` (module doc, "Access files"); without one, a value naming a file is
/// refused: there is no htpasswd or keys file beside an index (guard/), and its rule would refuse everyone.
fn access_files(v: &mut SiteValue, value_path: &str, dir: Option<&Path>) -> Result<(), String> {
    let Some(a) = v.access.as_mut().filter(|a| a.htpasswd_file.is_some() || a.sso.is_some()) else { return Ok(()) };
    match dir {
        Some(dir) => {
            // Plain names only: an entry's files are the directory's, never another path of the pod.
            let names = [
                ("access.htpasswdFile", a.htpasswd_file.as_deref()),
                ("access.sso.keysFile", a.sso.as_ref().map(|s| &*s.keys_file)),
            ];
            for (field, name) in names {
                if let Some(n) = name.filter(|n| n.contains('/') || n.starts_with('.')) {
                    return Err(format!("{value_path}.{field}: {n:?} is not a plain file name of --sites-access-dir"));
                }
            }
            Arc::make_mut(a).load_files(dir).map_err(|e| format!("{value_path}.{e}"))
        }
        None if a.htpasswd_file.is_some() => {
            Err(format!("{value_path}.access.htpasswdFile: a pool site has no htpasswd file beside its value"))
        }
        None => Err(format!("{value_path}.access.sso: a pool site has no session keys file beside its value")),
    }
}

/// The bytes of each entry of `sites`, as the shard holds them (the top level was checked from the parsed value).
fn raw_entries(bytes: &[u8]) -> Result<Vec<&RawValue>, String> {
    let top: HashMap<String, &RawValue> = serde_json::from_slice(bytes).map_err(|e| format!("invalid JSON: {e}"))?;
    let sites = top.get("sites").ok_or("sites: required")?;
    serde_json::from_str(sites.get()).map_err(|e| format!("sites: {e}"))
}

fn site(v: &Value, path: &str, reading: &Reading, values: &mut Values, entry_revision: String) -> Result<Site, String> {
    let m = object(v, path, &["id", "hosts", "value", "limits", "content"])?;
    let id = required(m, path, "id")?.as_str().ok_or_else(|| format!("{path}.id: expected a string"))?;
    if !is_site_id(id) {
        return Err(format!("{path}.id: {id:?} is not <namespace>.<name> (DNS labels joined by one dot)"));
    }
    let hosts_path = join(path, "hosts");
    let hosts = required(m, path, "hosts")?.as_array().ok_or_else(|| format!("{hosts_path}: expected an array"))?;
    let mut hs: Vec<Arc<str>> = Vec::with_capacity(hosts.len());
    for (i, h) in hosts.iter().enumerate() {
        let h = h.as_str().ok_or_else(|| format!("{hosts_path}[{i}]: expected a string"))?;
        if !super::hosts::is_normal(h) {
            return Err(format!("{hosts_path}[{i}]: {h:?} is not lowercase without port and trailing dot"));
        }
        if !hs.iter().any(|x| &**x == h) {
            hs.push(h.into());
        }
    }
    let value_path = join(path, "value");
    let value = required(m, path, "value")?;
    // The value is re-serialised and read by the site value's own parser (one set of rules and messages).
    let bytes = serde_json::to_vec(value).map_err(|e| format!("{value_path}: {e}"))?;
    let revision = revision_of(&bytes);
    let parsed = match values.get(&revision) {
        Some(v) => v.clone(),
        None => {
            let mut v = SiteValue::parse(&bytes).map_err(|e| format!("{value_path}.{e}"))?;
            v.check_process(reading.tls).map_err(|e| format!("{value_path}.{e}"))?;
            if v.per_client_handshakes.is_some() {
                // The pool's TLS listener is shared: its handshakes come before the site is known
                // (fairshare/handshake.rs).
                return Err(format!(
                    "{value_path}.limits.perClientHandshakes: a pool site has no TLS listener of its own to limit"
                ));
            }
            access_files(&mut v, &value_path, reading.access_dir.as_deref())?;
            let v = Arc::new(v);
            values.insert(revision.clone(), v.clone());
            v
        }
    };
    let lp = join(path, "limits");
    let lm = object(required(m, path, "limits")?, &lp, &["maxFiles", "maxBytes", "requestsPerSecond"])?;
    let num = |k: &str| -> Result<u64, String> {
        required(lm, &lp, k)?.as_u64().ok_or_else(|| format!("{lp}.{k}: expected a non-negative integer"))
    };
    let limits = Limits {
        max_files: num("maxFiles")?,
        max_bytes: num("maxBytes")?,
        requests_per_second: num("requestsPerSecond")?,
    };
    Ok(Site {
        id: id.to_string(),
        hosts: hs.into_boxed_slice(),
        value: Revised { value: parsed, revision },
        limits,
        entry_revision,
    })
}

/// `<namespace>.<name>`: two DNS labels (lowercase alphanumerics and `-`, not at either end) joined by one dot.
/// Such an id is a safe directory name (no `/`, never `.` or `..`).
pub fn is_site_id(id: &str) -> bool {
    let label = |l: &str| {
        !l.is_empty()
            && l.len() <= 63
            && l.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
            && !l.starts_with('-')
            && !l.ends_with('-')
    };
    matches!(id.split_once('.'), Some((ns, name)) if label(ns) && label(name))
}

#[cfg(test)]
mod tests {
    use super::*;

    const EXAMPLE: &str = include_str!("../../tests/data/pool-index-example.json");

    #[test]
    fn the_contract_example_parses() {
        let sites = parse_shard(EXAMPLE.as_bytes(), &Reading::default()).unwrap();
        assert_eq!(sites.len(), 2);
        assert_eq!(sites[0].id, "team-a.docs");
        assert_eq!(&*sites[0].hosts[0], "docs.example.com");
        assert!(sites[0].value.value.clean_urls);
        assert_eq!(sites[0].value.value.not_found_page.as_deref(), Some("/404.html"));
        assert_eq!(sites[1].limits, Limits { max_files: 20000, max_bytes: 268435456, requests_per_second: 2000 });
    }

    fn err(s: &str) -> String {
        parse_shard(s.as_bytes(), &Reading::default()).unwrap_err()
    }

    const LIM: &str = r#""limits":{"maxFiles":1,"maxBytes":1,"requestsPerSecond":1}"#;

    #[test]
    fn unknown_fields_are_refused_by_path_except_in_content() {
        assert_eq!(err(r#"{"version":1,"extra":1}"#), "extra: unknown field");
        assert_eq!(err(r#"{"version":2}"#), "version: 2 is not a version this server reads (1)");
        let s = format!(r#"{{"version":1,"sites":[{{"id":"a.b","hosts":[],"value":{{"version":1}},{LIM},"x":1}}]}}"#);
        assert_eq!(err(&s), "sites[0].x: unknown field");
        let s = format!(
            r#"{{"version":1,"sites":[{{"id":"a.b","hosts":[],"value":{{"version":1}},{LIM},"content":{{"anything":{{"goes":1}}}}}}]}}"#
        );
        assert!(parse_shard(s.as_bytes(), &Reading::default()).is_ok());
        let s = r#"{"version":1,"sites":[{"id":"a.b","hosts":[],"value":{"version":1},"limits":{"maxFiles":1,"maxBytes":1}}]}"#;
        assert_eq!(err(s), "sites[0].limits.requestsPerSecond: required");
        let s =
            format!(r#"{{"version":1,"sites":[{{"id":"a.b","hosts":[],"value":{{"version":1,"bogus":1}},{LIM}}}]}}"#);
        assert_eq!(err(&s), "sites[0].value.bogus: unknown field");
        let s = format!(r#"{{"version":1,"sites":[{{"id":"a.b","hosts":["A.b"],"value":{{"version":1}},{LIM}}}]}}"#);
        assert!(err(&s).starts_with("sites[0].hosts[0]:"));
        let s = format!(r#"{{"version":1,"sites":[{{"id":"../x","hosts":[],"value":{{"version":1}},{LIM}}}]}}"#);
        assert!(err(&s).starts_with("sites[0].id:"));
    }

    #[test]
    fn a_pool_site_may_not_limit_tls_handshakes() {
        // Even on a TLS pool: its listener is shared, and a handshake comes before its site is known.
        let v = r#"{"version":1,"limits":{"perClientHandshakes":{"handshakes":1}}}"#;
        let s = format!(r#"{{"version":1,"sites":[{{"id":"a.b","hosts":[],"value":{v},{LIM}}}]}}"#);
        assert_eq!(
            parse_shard(s.as_bytes(), &Reading { tls: true, access_dir: None }).unwrap_err(),
            "sites[0].value.limits.perClientHandshakes: a pool site has no TLS listener of its own to limit"
        );
        assert!(err(&s).contains("needs a TLS listener"), "without TLS, the site value's own check says why");
    }

    #[test]
    fn a_pool_site_may_not_ask_for_passwords_but_may_restrict_addresses() {
        let rule = r#"{"pathPrefix":"/a","basicAuth":{}}"#;
        let v = format!(r#"{{"version":1,"access":{{"htpasswdFile":"htpasswd","rules":[{rule}]}}}}"#);
        let s = format!(r#"{{"version":1,"sites":[{{"id":"a.b","hosts":[],"value":{v},{LIM}}}]}}"#);
        assert_eq!(err(&s), "sites[0].value.access.htpasswdFile: a pool site has no htpasswd file beside its value");
        let v =
            r#"{"version":1,"access":{"trustedProxies":["10.0.0.0/8"],"rules":[{"pathPrefix":"/a","allow":["::1"]}]}}"#;
        let s = format!(r#"{{"version":1,"sites":[{{"id":"a.b","hosts":[],"value":{v},{LIM}}}]}}"#);
        assert!(parse_shard(s.as_bytes(), &Reading::default()).is_ok());
    }

    /// A site's own pods with previews (--sites-access-dir): the files are read from that directory by plain
    /// name, a missing or bad one refuses the shard naming it; a name with a path in it is the value's own error.
    #[test]
    fn with_an_access_dir_an_entry_reads_its_files_there() {
        let dir = std::env::temp_dir().join(format!("hs-index-access-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let hash = bcrypt::hash("pw", 4).unwrap();
        std::fs::write(dir.join("htpasswd-0123"), format!("jane:{hash}\n")).unwrap();
        std::fs::write(dir.join("keys-4567"), "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=\n").unwrap();
        let reading = Reading { tls: false, access_dir: Some(dir.clone()) };
        let shard_of = |file: &str, keys: &str| {
            let v = format!(
                r#"{{"version":1,"access":{{"htpasswdFile":"{file}","sso":{{"loginURL":"/login","keysFile":"{keys}"}},"rules":[{{"pathPrefix":"/a","basicAuth":{{}}}},{{"pathPrefix":"/b","signIn":{{}}}}]}}}}"#
            );
            format!(r#"{{"version":1,"sites":[{{"id":"a.b","hosts":[],"value":{v},{LIM}}}]}}"#)
        };
        let sites = parse_shard(shard_of("htpasswd-0123", "keys-4567").as_bytes(), &reading).unwrap();
        let a = sites[0].value.value.access.as_ref().unwrap();
        assert_eq!(a.users.as_ref().map(|u| u.len()), Some(1));
        assert!(a.sso.as_ref().unwrap().keys.is_some());
        let e = parse_shard(shard_of("htpasswd-gone", "keys-4567").as_bytes(), &reading).unwrap_err();
        assert!(e.starts_with("sites[0].value.access.htpasswdFile") && e.contains("htpasswd-gone"), "{e}");
        let e = parse_shard(shard_of("htpasswd-0123", "../keys-4567").as_bytes(), &reading).unwrap_err();
        assert!(e.starts_with("sites[0].value.access.sso.keysFile"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn ids_are_two_dns_labels() {
        assert!(is_site_id("team-a.docs") && is_site_id("a.b"));
        for bad in ["a", "a.b.c", ".a", "a.", "A.b", "a/b.c", "..", "-a.b", "a.b-"] {
            assert!(!is_site_id(bad), "{bad}");
        }
    }

    fn shard(sites: &[(&str, &[&str])]) -> Vec<u8> {
        let list: Vec<String> = sites
            .iter()
            .map(|(id, hosts)| {
                let hs: Vec<String> = hosts.iter().map(|h| format!("{h:?}")).collect();
                format!(r#"{{"id":"{id}","hosts":[{}],"value":{{"version":1}},{LIM}}}"#, hs.join(","))
            })
            .collect();
        format!(r#"{{"version":1,"sites":[{}]}}"#, list.join(",")).into_bytes()
    }

    #[test]
    fn an_entry_revision_names_the_entry_bytes_so_a_new_host_changes_it() {
        let before =
            parse_shard(&shard(&[("a.one", &["one.example"]), ("b.two", &["two.example"])]), &Reading::default())
                .unwrap();
        let after = parse_shard(
            &shard(&[("a.one", &["one.example", "www.one.example"]), ("b.two", &["two.example"])]),
            &Reading::default(),
        )
        .unwrap();
        assert_ne!(before[0].entry_revision, after[0].entry_revision, "a host added: a new entry");
        assert_eq!(before[0].value.revision, after[0].value.revision, "its value alone did not change");
        assert_eq!(before[1].entry_revision, after[1].entry_revision, "the other entry keeps its revision");
        let b = format!(r#"{{"id":"b.two","hosts":["two.example"],"value":{{"version":1}},{LIM}}}"#);
        assert_eq!(before[1].entry_revision, revision_of(b.as_bytes()), "the entry's bytes as the shard holds them");
    }

    #[test]
    fn a_refused_shard_keeps_its_last_good_form_and_a_duplicate_host_refuses_the_later_site() {
        let mut ix = Index::default();
        ix.update("index-00.json", shard(&[("a.one", &["one.example"])]), &Reading::default());
        ix.update(
            "index-01.json",
            shard(&[("b.two", &["two.example"]), ("c.three", &["one.example"])]),
            &Reading::default(),
        );
        let m = ix.merge();
        let ids: Vec<&str> = m.sites.iter().map(|s| s.id.as_str()).collect();
        assert_eq!(ids, ["a.one", "b.two"]);
        assert_eq!(m.problems.len(), 1);
        assert!(m.problems[0].contains("c.three") && m.problems[0].contains("one.example"), "{:?}", m.problems);

        ix.update("index-00.json", b"{\"version\":1,\"oops\":true}".to_vec(), &Reading::default());
        let m = ix.merge();
        assert_eq!(m.sites.iter().map(|s| s.id.as_str()).collect::<Vec<_>>(), ["a.one", "b.two"]);
        assert!(m.problems.iter().any(|p| p.contains("index-00.json refused") && p.contains("oops: unknown field")));
        assert!(Arc::ptr_eq(&m.sites[0].value.value, &m.sites[1].value.value), "one value for equal values");
        ix.update("index-00.json", shard(&[]), &Reading::default());
        assert_eq!(ix.merge().sites.iter().map(|s| s.id.as_str()).collect::<Vec<_>>(), ["b.two", "c.three"]);
    }
}
