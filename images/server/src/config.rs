//! Configuration: command-line flags (clap, see `flags.rs`), each with a `HYPERSTATIC_*` environment equivalent
//! (flags win). `--max-connection-age 30s` and `HYPERSTATIC_MAX_CONNECTION_AGE=30s` are the same setting.
//! Repeatable flags (`--cache-control`, `--header`, `--cors`) take newline-separated lists in the environment.
//!
//! `Config` holds the process settings only. A site's rules are a site value (site_value/): `--site FILE`, or the
//! value the site-rule flags build; `Config::site` says which, and the core never reads `Config`.

mod flags;
mod values;

use std::ffi::OsString;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use clap::error::ErrorKind;
use clap::parser::ValueSource;
use clap::{ArgMatches, Command, CommandFactory, FromArgMatches};

use flags::Flags;
pub use values::{parse_duration, parse_size};

use crate::site_value::{RuleTexts, SiteValue};

/// Where the site value comes from.
#[derive(Debug, Clone, PartialEq)]
pub enum SiteSource {
    /// `--site FILE`: read at start and on every reload.
    File(PathBuf),
    /// Built once from the site-rule flags (their defaults when none is given).
    Flags(std::sync::Arc<SiteValue>),
}

#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    pub root: PathBuf,
    pub listen: SocketAddr,
    pub admin_listen: SocketAddr,
    /// 0 = automatic (affinity mask capped by the cgroup quota).
    pub workers: usize,
    pub header_timeout: Duration,
    pub keepalive_timeout: Duration,
    pub max_requests_per_connection: u64,
    pub max_connections_per_worker: usize,
    pub max_connection_age: Duration,
    pub drain_delay: Duration,
    /// After SIGTERM, the longest the drain waits for its release before the shutdown (0: no hold; control.rs).
    pub drain_hold: Duration,
    pub shutdown_timeout: Duration,
    pub check: bool,
    /// The site value: its file, or the one the site-rule flags built.
    pub site: SiteSource,
    pub max_memory_file_size: u64,
    /// `--max-entries`, `--max-depth`: the size of tree a load takes (site/walk.rs, `Caps`).
    pub max_entries: usize,
    pub max_depth: usize,
    /// `--client-table-size`: bytes of per-client buckets, all workers together (fairshare/).
    pub client_table_size: u64,
    /// `--memory-limit`: overrides the cgroup's; Some(0) = no limit (see memory.rs).
    pub memory_limit: Option<u64>,
    /// `--memory-budget`: overrides the automatic content budget.
    pub memory_budget: Option<u64>,
    pub compress: bool,
    /// `--compress-cache`: where background encodings persist across restarts (encoder.rs).
    pub compress_cache: Option<PathBuf>,
    /// `--termination-log`: where a failed first load writes its error before the process exits (load_error.rs).
    pub termination_log: Option<PathBuf>,
    pub access_log: bool,
    /// At least 1.
    pub access_log_sample: u64,
    /// `--tls-cert`/`--tls-key`: HTTPS is served on `tls_listen` when set (tls/).
    pub tls: Option<TlsFiles>,
    pub tls_listen: SocketAddr,
    /// `--alt-svc-port`: the port `Alt-Svc` names for HTTP/3 (the TLS listener's when unset; server/h3.rs).
    pub alt_svc_port: Option<u16>,
    /// `--http3-ack-every`: the packets per ACK asked of clients that support the ACK frequency extension; 0 = none
    /// asked (server/h3.rs).
    pub http3_ack_every: u32,
    /// `--http3-early-data`: 0-RTT accepted, GET and HEAD served from it, `425 Too Early` otherwise (server/h3.rs).
    pub http3_early_data: bool,
    /// `--h2c`: the plain listener also speaks HTTP/2 to a connection that opens with the client preface.
    pub h2c: bool,
    /// `--proxy-protocol`: every TCP connection opens with a PROXY v2 header naming the client (server/proxy.rs).
    pub proxy_protocol: bool,
    /// `--sites DIR`: serve a shared pool (pool/) instead of `root` with `site`.
    pub sites: Option<PathBuf>,
    /// `--sites-access-dir DIR`: where the index's entries may have their access files (pool/index.rs).
    pub sites_access_dir: Option<PathBuf>,
}

/// The PEM files of the serving certificate (a `kubernetes.io/tls` Secret's `tls.crt` and `tls.key`).
#[derive(Debug, Clone, PartialEq)]
pub struct TlsFiles {
    pub cert: PathBuf,
    pub key: PathBuf,
    /// `--http2`: ALPN offers `h2` before `http/1.1` (tls/material.rs).
    pub http2: bool,
    /// `--http3`: HTTP/3 on UDP on the TLS listener's port (server/h3.rs), advertised with `Alt-Svc`.
    pub http3: bool,
}

/// The same defaults as the flags (a test holds them equal); tests of other modules start from here.
impl Default for Config {
    fn default() -> Self {
        Config {
            root: PathBuf::from("/site"),
            listen: "[::]:8080".parse().unwrap(),
            admin_listen: "[::]:9090".parse().unwrap(),
            workers: 0,
            header_timeout: Duration::from_secs(10),
            keepalive_timeout: Duration::from_secs(60),
            max_requests_per_connection: 10_000,
            max_connections_per_worker: 16_384,
            max_connection_age: Duration::from_secs(60),
            drain_delay: Duration::from_secs(5),
            drain_hold: Duration::ZERO,
            shutdown_timeout: Duration::from_secs(20),
            check: false,
            site: SiteSource::Flags(Default::default()),
            max_memory_file_size: 8 << 20,
            max_entries: crate::site::walk::DEFAULT_CAPS.max_entries,
            max_depth: crate::site::walk::DEFAULT_CAPS.max_depth,
            client_table_size: 1 << 20,
            memory_limit: None,
            memory_budget: None,
            compress: true,
            compress_cache: None,
            termination_log: None,
            access_log: false,
            access_log_sample: 1,
            tls: None,
            tls_listen: "[::]:8443".parse().unwrap(),
            alt_svc_port: None,
            http3_ack_every: 0,
            http3_early_data: false,
            h2c: false,
            proxy_protocol: false,
            sites: None,
            sites_access_dir: None,
        }
    }
}

impl Config {
    /// How `--sites`'s index values are read: TLS or not, and `--sites-access-dir`.
    pub fn index_reading(&self) -> crate::pool::index::Reading {
        crate::pool::index::Reading { tls: self.tls.is_some(), access_dir: self.sites_access_dir.clone() }
    }

    /// What a load needs of the process settings (site/loader.rs): the core takes this, never `Config`.
    pub fn load_settings(&self) -> crate::site::loader::Settings {
        crate::site::loader::Settings {
            root: self.root.clone(),
            caps: crate::site::walk::Caps { max_entries: self.max_entries, max_depth: self.max_depth },
            max_memory_file_size: self.max_memory_file_size,
            budget: crate::site::memory::Budget::of(self.memory_limit, self.memory_budget),
            compress: self.compress,
            etag_from_metadata: false,
            all_on_disk: false,
            disk_by_path: false,
        }
    }

    /// The value the site-rule flags built; None with `--site`.
    pub fn flag_site(&self) -> Option<&SiteValue> {
        match &self.site {
            SiteSource::Flags(v) => Some(v),
            SiteSource::File(_) => None,
        }
    }

    /// Parses the process's arguments (program name first) and `HYPERSTATIC_*` environment. `--help`,
    /// `--version` and every usage error come back as a clap error: `err.exit()` prints it (help and version on
    /// stdout with status 0, errors on stderr with status 2).
    pub fn parse_from<I, T>(args: I) -> Result<Config, clap::Error>
    where
        I: IntoIterator<Item = T>,
        T: Into<OsString> + Clone,
    {
        parse_with(Flags::command(), args)
    }

    /// The `--help` text.
    pub fn help() -> String {
        Flags::command().render_help().to_string()
    }
}

fn parse_with<I, T>(mut cmd: Command, args: I) -> Result<Config, clap::Error>
where
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    let matches = cmd.try_get_matches_from_mut(args)?;
    let flags = Flags::from_arg_matches(&matches)?;
    from_flags(flags, &matches).map_err(|msg| cmd.error(ErrorKind::ValueValidation, msg))
}

/// The values of a repeatable flag: one per flag on the command line, or one per non-empty line of its
/// environment variable.
fn rule_texts(values: Vec<String>, matches: &ArgMatches, id: &str) -> Vec<String> {
    if matches.value_source(id) != Some(ValueSource::EnvVariable) {
        return values;
    }
    values.iter().flat_map(|v| v.lines()).map(str::trim).filter(|l| !l.is_empty()).map(String::from).collect()
}

/// The flags that build the site value (their clap ids): with `--site`, none of them may be given.
const SITE_RULE_FLAGS: [&str; 13] = [
    "cache_control",
    "default_cache_control",
    "header",
    "security_headers",
    "cors",
    "spa_fallback",
    "not_found_page",
    "redirect",
    "clean_urls",
    "error_page",
    "https_redirect",
    "https_redirect_port",
    "hsts",
];

/// The most packets per acknowledgement `--http3-ack-every` may ask: one GSO message's worth (server/h3.rs sends up
/// to 64 datagrams at once); past it the congestion controller would hear of a whole burst only after the next.
const MAX_ACK_EVERY: u32 = 64;

/// The rules are parsed here rather than by clap value parsers because, in the environment, one variable holds
/// several of them; the error messages name the flag all the same.
fn from_flags(f: Flags, matches: &ArgMatches) -> Result<Config, String> {
    if f.sites.is_some() {
        pool_exclusive(matches)?;
    } else if f.sites_access_dir.is_some() {
        return Err("--sites-access-dir needs --sites: it is where the index's entries have their access files".into());
    }
    let tls = tls_files(f.tls_cert, f.tls_key, f.https_redirect, (f.http2, f.http3), matches)?;
    if f.alt_svc_port.is_some() && !f.http3 {
        return Err("--alt-svc-port needs --http3: it is the port HTTP/3 is advertised on".into());
    }
    if f.http3_early_data && !f.http3 {
        return Err("--http3-early-data needs --http3: it is HTTP/3's 0-RTT".into());
    }
    if f.http3_ack_every == 1 || f.http3_ack_every > MAX_ACK_EVERY {
        return Err(format!(
            "--http3-ack-every {}: 0 (ask clients nothing) or 2 to {MAX_ACK_EVERY} packets per acknowledgement",
            f.http3_ack_every
        ));
    }
    let site = match f.site {
        Some(path) => {
            let given: Vec<String> = SITE_RULE_FLAGS
                .iter()
                .filter(|id| {
                    matches!(matches.value_source(id), Some(ValueSource::CommandLine | ValueSource::EnvVariable))
                })
                .map(|id| format!("--{}", id.replace('_', "-")))
                .collect();
            if !given.is_empty() {
                return Err(format!(
                    "--site and {}: a site's rules come from the site value file or from flags, not both",
                    given.join(", ")
                ));
            }
            SiteSource::File(path)
        }
        None => SiteSource::Flags(std::sync::Arc::new(SiteValue::from_flags(RuleTexts {
            cache_control: rule_texts(f.cache_control, matches, "cache_control"),
            default_cache_control: f.default_cache_control,
            headers: rule_texts(f.header, matches, "header"),
            security_headers: f.security_headers,
            cors: rule_texts(f.cors, matches, "cors"),
            spa_fallback: f.spa_fallback,
            not_found_page: f.not_found_page,
            redirects: rule_texts(f.redirect, matches, "redirect"),
            clean_urls: f.clean_urls,
            error_pages: rule_texts(f.error_page, matches, "error_page"),
            https_redirect: f.https_redirect.then_some(f.https_redirect_port),
            hsts: f.hsts,
        })?)),
    };
    Ok(Config {
        root: f.root,
        listen: f.listen,
        admin_listen: f.admin_listen,
        workers: f.workers,
        header_timeout: f.header_timeout,
        keepalive_timeout: f.keepalive_timeout,
        max_requests_per_connection: f.max_requests_per_connection,
        max_connections_per_worker: f.max_connections_per_worker as usize,
        max_connection_age: f.max_connection_age,
        drain_delay: f.drain_delay,
        drain_hold: f.drain_hold,
        shutdown_timeout: f.shutdown_timeout,
        check: f.check,
        site,
        max_memory_file_size: f.max_memory_file_size,
        max_entries: f.max_entries as usize,
        max_depth: f.max_depth as usize,
        client_table_size: f.client_table_size,
        memory_limit: f.memory_limit,
        memory_budget: f.memory_budget,
        compress: f.compress,
        compress_cache: f.compress_cache,
        termination_log: f
            .termination_log
            .or_else(|| kubernetes_termination_log(Path::new(KUBERNETES_TERMINATION_LOG))),
        access_log: f.access_log,
        access_log_sample: f.access_log_sample.max(1),
        tls_listen: f.tls_listen,
        alt_svc_port: f.alt_svc_port,
        http3_ack_every: f.http3_ack_every,
        http3_early_data: f.http3_early_data,
        h2c: f.h2c,
        proxy_protocol: f.proxy_protocol,
        sites: f.sites,
        sites_access_dir: f.sites_access_dir,
        tls,
    })
}

/// `--sites` serves every site of a pool, each with its own value: a root, a site value file or a site-rule flag
/// given with it would be ignored, so it is a usage error.
fn pool_exclusive(matches: &ArgMatches) -> Result<(), String> {
    let given: Vec<String> = ["root", "site"]
        .iter()
        .chain(SITE_RULE_FLAGS.iter())
        .filter(|id| matches!(matches.value_source(id), Some(ValueSource::CommandLine | ValueSource::EnvVariable)))
        .map(|id| format!("--{}", id.replace('_', "-")))
        .collect();
    if given.is_empty() {
        return Ok(());
    }
    Err(format!(
        "--sites and {}: a pool's sites take their trees and values from its index, not from flags",
        given.join(", ")
    ))
}

/// Both files or neither; the redirect and HSTS only make sense with HTTPS served here (a redirect in front of
/// a proxy that terminates TLS and forwards to the plain port would loop).
/// Where the kubelet expects a container's termination message (the default terminationMessagePath).
pub const KUBERNETES_TERMINATION_LOG: &str = "/dev/termination-log";

/// The termination log when none is given: the kubelet's file, if this process runs in a container that has one.
/// The server looks for it itself so that the operator's pod template need not name it: a new field in every
/// template would roll every site at once on the operator upgrade that adds it.
fn kubernetes_termination_log(path: &Path) -> Option<PathBuf> {
    path.is_file().then(|| path.to_path_buf())
}

fn tls_files(
    cert: Option<PathBuf>,
    key: Option<PathBuf>,
    redirect: bool,
    (http2, http3): (bool, bool),
    matches: &ArgMatches,
) -> Result<Option<TlsFiles>, String> {
    let files = match (cert, key) {
        (Some(cert), Some(key)) => Some(TlsFiles { cert, key, http2, http3 }),
        (None, None) => None,
        (Some(_), None) => return Err("--tls-cert needs --tls-key (both or neither)".into()),
        (None, Some(_)) => return Err("--tls-key needs --tls-cert (both or neither)".into()),
    };
    if files.is_none() && http3 {
        return Err("--http3 needs --tls-cert and --tls-key".into());
    }
    if files.is_none() && redirect {
        return Err("--https-redirect needs --tls-cert and --tls-key".into());
    }
    if files.is_none() && matches.get_one::<String>("hsts").is_some() {
        return Err("--hsts needs --tls-cert and --tls-key".into());
    }
    Ok(files)
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use super::*;

    #[test]
    fn the_kubernetes_termination_log_is_used_only_where_it_exists() {
        let dir = std::env::temp_dir().join(format!("hs-termlog-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("termination-log");
        assert_eq!(kubernetes_termination_log(&file), None, "no file: outside Kubernetes nothing is written");
        std::fs::write(&file, "").unwrap();
        assert_eq!(kubernetes_termination_log(&file), Some(file.clone()));
        assert_eq!(kubernetes_termination_log(&dir), None, "a directory is not a termination log");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// The site value the flags built.
    fn site(c: &Config) -> &SiteValue {
        c.flag_site().expect("no --site: the flags build the value")
    }

    /// Flags only: the test process's environment is not consulted.
    fn flags(args: &[&str]) -> Result<Config, clap::Error> {
        let cmd = Flags::command().mut_args(|a| a.env(None::<&str>));
        parse_with(cmd, std::iter::once("hyperstatic-server").chain(args.iter().copied()))
    }

    /// Serialises the tests that set process environment variables (clap reads them while building the command).
    static ENV: Mutex<()> = Mutex::new(());

    fn with_env(env: &[(&str, &str)], args: &[&str]) -> Result<Config, clap::Error> {
        let _guard = ENV.lock().unwrap_or_else(|e| e.into_inner());
        for (k, v) in env {
            std::env::set_var(k, v);
        }
        let r = Config::parse_from(std::iter::once("hyperstatic-server").chain(args.iter().copied()));
        for (k, _) in env {
            std::env::remove_var(k);
        }
        r
    }

    fn error(args: &[&str]) -> String {
        flags(args).expect_err("should not parse").to_string()
    }

    #[test]
    fn defaults_match_config_default() {
        assert_eq!(flags(&[]).unwrap(), Config::default());
    }

    /// The arguments controllers/staticsite/serverargs.go (ServerArgs) builds, in both of its duration forms.
    #[test]
    fn operator_arguments() {
        let c = flags(&[
            "--root",
            "/site",
            "--listen",
            "0.0.0.0:8080",
            "--admin-listen",
            "0.0.0.0:9090",
            "--drain-delay",
            "5s",
            "--shutdown-timeout",
            "1500ms",
            "--max-requests-per-connection",
            "100",
            "--max-connection-age",
            "90s",
            "--cache-control",
            "/assets/**=public, max-age=31536000, immutable",
            "--cache-control",
            "*.html=no-cache",
            "--header",
            "X-Frame-Options:DENY",
            "--header",
            "Content-Security-Policy:default-src 'self'",
            "--spa-fallback",
            "--not-found-page",
            "/404.html",
        ])
        .unwrap();
        assert_eq!(c.drain_delay, Duration::from_secs(5));
        assert_eq!(c.shutdown_timeout, Duration::from_millis(1500));
        assert_eq!(c.max_requests_per_connection, 100);
        assert_eq!(c.max_connection_age, Duration::from_secs(90));
        assert_eq!(site(&c).cache_control.len(), 2);
        assert_eq!(site(&c).cache_control[0].glob.pattern(), "/assets/**");
        assert_eq!(site(&c).cache_control[0].value, "public, max-age=31536000, immutable");
        assert_eq!(site(&c).headers[1].name, "Content-Security-Policy");
        assert_eq!(site(&c).headers[1].value, "default-src 'self'");
        assert!(site(&c).spa_fallback);
        assert_eq!(site(&c).not_found_page.as_deref(), Some("/404.html"));
    }

    #[test]
    fn inline_values_and_booleans() {
        let c = flags(&[
            "--workers=3",
            "--header-timeout=500ms",
            "--check",
            "--compress=false",
            "--not-found-page=404.html",
        ])
        .unwrap();
        assert_eq!(c.workers, 3);
        assert_eq!(c.header_timeout, Duration::from_millis(500));
        assert!(c.check);
        assert!(!c.compress);
        assert_eq!(site(&c).not_found_page.as_deref(), Some("/404.html"));
        // A boolean flag never takes the next argument as its value.
        assert!(flags(&["--check", "false"]).is_err());
        assert!(!site(&flags(&["--spa-fallback=false"]).unwrap()).spa_fallback);
        assert_eq!(flags(&["--access-log-sample", "0"]).unwrap().access_log_sample, 1);
    }

    #[test]
    fn values_may_start_with_a_hyphen() {
        let c = flags(&["--header", "-X-Leading-Hyphen:-1", "--cache-control", "-draft-*.html=no-store"]).unwrap();
        assert_eq!(
            (site(&c).headers[0].name.as_str(), site(&c).headers[0].value.as_str()),
            ("-X-Leading-Hyphen", "-1")
        );
        assert_eq!(site(&c).cache_control[0].glob.pattern(), "-draft-*.html");
    }

    #[test]
    fn the_last_of_a_repeated_flag_wins() {
        let c =
            flags(&["--drain-delay", "5s", "--spa-fallback", "--drain-delay", "1s", "--spa-fallback=false"]).unwrap();
        assert_eq!(c.drain_delay, Duration::from_secs(1));
        assert!(!site(&c).spa_fallback);
        // Repeatable rules accumulate instead.
        assert_eq!(site(&flags(&["--header", "A: 1", "--header", "B: 2"]).unwrap()).headers.len(), 2);
    }

    #[test]
    fn flags_override_env() {
        let c = with_env(
            &[("HYPERSTATIC_ROOT", "/env"), ("HYPERSTATIC_DRAIN_DELAY", "1m"), ("HYPERSTATIC_WORKERS", "9")],
            &["--root", "/x", "--workers=3"],
        )
        .unwrap();
        assert_eq!(c.root, PathBuf::from("/x"));
        assert_eq!(c.workers, 3);
        assert_eq!(c.drain_delay, Duration::from_secs(60));
    }

    #[test]
    fn env_lists_and_booleans() {
        let rules = "*.html=no-cache\n\n  /assets/**=public, max-age=31536000\n";
        let c = with_env(&[("HYPERSTATIC_CACHE_CONTROL", rules), ("HYPERSTATIC_CHECK", "true")], &[]).unwrap();
        assert_eq!(site(&c).cache_control.len(), 2);
        assert_eq!(site(&c).cache_control[1].glob.pattern(), "/assets/**");
        assert_eq!(site(&c).cache_control[1].value, "public, max-age=31536000");
        assert!(c.check);
        // Any rule on the command line replaces the environment's list.
        let c = with_env(&[("HYPERSTATIC_CACHE_CONTROL", rules)], &["--cache-control", "*.css=x"]).unwrap();
        assert_eq!(site(&c).cache_control.len(), 1);
        let err = with_env(&[("HYPERSTATIC_DRAIN_DELAY", "5x")], &[]).unwrap_err().to_string();
        assert!(err.contains("--drain-delay"), "{err}");
    }

    #[test]
    fn memory_limit_and_budget() {
        assert_eq!((Config::default().memory_limit, Config::default().memory_budget), (None, None));
        let c = flags(&["--memory-limit", "256Mi", "--memory-budget=1000"]).unwrap();
        assert_eq!((c.memory_limit, c.memory_budget), (Some(256 << 20), Some(1000)));
        assert_eq!(flags(&["--memory-limit", "1Gi"]).unwrap().memory_limit, Some(1 << 30));
        assert_eq!(flags(&["--client-table-size", "64KiB"]).unwrap().client_table_size, 64 << 10);
        assert_eq!(flags(&["--memory-limit", "none"]).unwrap().memory_limit, Some(0));
        assert_eq!(flags(&["--memory-limit", "max"]).unwrap().memory_limit, Some(0));
        assert_eq!(flags(&["--memory-budget", "0"]).unwrap().memory_budget, Some(0));
        let c = with_env(&[("HYPERSTATIC_MEMORY_LIMIT", "48Mi"), ("HYPERSTATIC_MEMORY_BUDGET", "4Ki")], &[]).unwrap();
        assert_eq!((c.memory_limit, c.memory_budget), (Some(48 << 20), Some(4096)));
        assert!(error(&["--memory-limit", "lots"]).contains("--memory-limit"));
        assert!(error(&["--memory-budget", "none"]).contains("--memory-budget"));
    }

    #[test]
    fn errors_name_the_flag() {
        for (args, flag) in [
            (&["--listen", "nothing"][..], "--listen"),
            (&["--drain-delay", "5x"], "--drain-delay"),
            (&["--keepalive-timeout", "0s"], "--keepalive-timeout"),
            (&["--max-requests-per-connection", "0"], "--max-requests-per-connection"),
            (&["--max-memory-file-size", "1q"], "--max-memory-file-size"),
            (&["--compress=maybe"], "--compress"),
            (&["--workers"], "--workers"),
            (&["--header", "Bad Name: x"], "--header"),
            (&["--cache-control", "no-glob"], "--cache-control"),
            (&["--cors", "/a=example.com"], "--cors"),
            (&["--security-headers=maybe"], "--security-headers"),
            (&["--nope"], "--nope"),
        ] {
            let e = error(args);
            assert!(e.contains(flag), "{args:?}: {e}");
        }
        assert!(error(&["stray"]).contains("stray"));
    }

    #[test]
    fn help_and_version() {
        let h = Config::help();
        for f in [
            "--root",
            "--listen",
            "--admin-listen",
            "--workers",
            "--header-timeout",
            "--keepalive-timeout",
            "--max-requests-per-connection",
            "--max-connection-age",
            "--drain-delay",
            "--shutdown-timeout",
            "--check",
            "--cache-control",
            "--header",
            "--spa-fallback",
            "--not-found-page",
            "--memory-limit",
            "--memory-budget",
            "--security-headers",
            "--cors",
            "HYPERSTATIC_MEMORY_LIMIT",
            "HYPERSTATIC_MAX_CONNECTION_AGE",
        ] {
            assert!(h.contains(f), "{f} missing from help");
        }
        assert_eq!(flags(&["--help"]).unwrap_err().kind(), ErrorKind::DisplayHelp);
        let v = flags(&["--version"]).unwrap_err();
        assert_eq!(v.kind(), ErrorKind::DisplayVersion);
        assert_eq!(v.to_string(), format!("hyperstatic-server {}\n", env!("CARGO_PKG_VERSION")));
    }

    /// The TLS flag contract the operator builds against (branch `exposure`): both files or neither, redirect
    /// and HSTS only with TLS, and the environment equivalents.
    #[test]
    fn tls_flags() {
        let c = flags(&[
            "--tls-cert",
            "/etc/hyperstatic/tls/tls.crt",
            "--tls-key",
            "/etc/hyperstatic/tls/tls.key",
            "--tls-listen",
            "0.0.0.0:9443",
            "--https-redirect",
            "--https-redirect-port",
            "8443",
            "--hsts",
            "max-age=31536000; includeSubDomains",
        ])
        .unwrap();
        let files = c.tls.clone().unwrap();
        assert_eq!(files.cert, PathBuf::from("/etc/hyperstatic/tls/tls.crt"));
        assert_eq!(files.key, PathBuf::from("/etc/hyperstatic/tls/tls.key"));
        assert_eq!(c.tls_listen, "0.0.0.0:9443".parse().unwrap());
        assert_eq!(site(&c).https_redirect, Some(8443));
        assert_eq!(site(&c).hsts.as_deref(), Some("max-age=31536000; includeSubDomains"));
        let c = flags(&["--tls-cert", "c", "--tls-key", "k", "--https-redirect=true"]).unwrap();
        assert_eq!(site(&c).https_redirect, Some(443));
        assert_eq!(c.tls_listen, "[::]:8443".parse().unwrap());
        // The other listeners default to dual-stack [::] too (server/listen.rs falls back to 0.0.0.0 without IPv6).
        assert_eq!((c.listen, c.admin_listen), ("[::]:8080".parse().unwrap(), "[::]:9090".parse().unwrap()));
        assert!(error(&["--tls-cert", "c"]).contains("--tls-cert needs --tls-key"));
        assert!(error(&["--tls-key", "k"]).contains("--tls-key needs --tls-cert"));
        assert!(error(&["--https-redirect"]).contains("--https-redirect needs --tls-cert"));
        assert!(error(&["--hsts", "max-age=1"]).contains("--hsts needs --tls-cert"));
        assert!(error(&["--http3"]).contains("--http3 needs --tls-cert"));
        assert!(flags(&["--tls-cert", "c", "--tls-key", "k", "--http3"]).unwrap().tls.unwrap().http3);
        let h3 = ["--tls-cert", "c", "--tls-key", "k", "--http3"];
        assert_eq!(flags(&h3).unwrap().alt_svc_port, None, "Alt-Svc names the TLS listener's port by default");
        assert_eq!(flags(&[&h3[..], &["--alt-svc-port", "443"]].concat()).unwrap().alt_svc_port, Some(443));
        assert!(error(&["--tls-cert", "c", "--tls-key", "k", "--alt-svc-port", "443"])
            .contains("--alt-svc-port needs --http3"));
        assert!(error(&[&h3[..], &["--alt-svc-port", "0"]].concat()).contains("invalid port 0"));
        assert!(error(&[&h3[..], &["--alt-svc-port", "65536"]].concat()).contains("65536"));
        assert_eq!(flags(&h3).unwrap().http3_ack_every, Config::default().http3_ack_every);
        assert_eq!(flags(&[&h3[..], &["--http3-ack-every", "10"]].concat()).unwrap().http3_ack_every, 10);
        assert_eq!(flags(&[&h3[..], &["--http3-ack-every", "0"]].concat()).unwrap().http3_ack_every, 0);
        assert!(!flags(&h3).unwrap().http3_early_data, "0-RTT is off by default");
        assert!(flags(&[&h3[..], &["--http3-early-data"]].concat()).unwrap().http3_early_data);
        assert!(error(&["--tls-cert", "c", "--tls-key", "k", "--http3-early-data"])
            .contains("--http3-early-data needs --http3"));
        for bad in ["1", "65"] {
            assert!(
                error(&[&h3[..], &["--http3-ack-every", bad]].concat()).contains("0 (ask clients nothing) or 2 to 64")
            );
        }
        assert!(error(&["--tls-cert", "c", "--tls-key", "k", "--hsts", "a\u{1}b"]).contains("--hsts"));
        assert!(error(&["--tls-cert", "c", "--tls-key", "k", "--https-redirect-port", "70000"]).contains("70000"));
        let c = with_env(
            &[
                ("HYPERSTATIC_TLS_CERT", "/c"),
                ("HYPERSTATIC_TLS_KEY", "/k"),
                ("HYPERSTATIC_TLS_LISTEN", "127.0.0.1:1443"),
                ("HYPERSTATIC_HTTPS_REDIRECT", "true"),
                ("HYPERSTATIC_HTTPS_REDIRECT_PORT", "1443"),
                ("HYPERSTATIC_HSTS", "max-age=5"),
            ],
            &[],
        )
        .unwrap();
        assert_eq!(c.tls, Some(TlsFiles { cert: "/c".into(), key: "/k".into(), http2: true, http3: false }));
        assert_eq!(
            (c.tls_listen.port(), site(&c).https_redirect, site(&c).hsts.as_deref()),
            (1443, Some(1443), Some("max-age=5"))
        );
    }

    /// `--sites-access-dir` belongs to `--sites` (a site's own pods with previews): alone it is refused naming both;
    /// with `--sites` it is where the index is read from for access files.
    #[test]
    fn sites_access_dir_needs_sites() {
        assert!(error(&["--sites-access-dir", "/site/access"]).contains("--sites-access-dir needs --sites"));
        let c = flags(&["--sites", "/site", "--sites-access-dir", "/site/access"]).unwrap();
        assert_eq!(c.index_reading().access_dir.as_deref(), Some(std::path::Path::new("/site/access")));
        assert_eq!(flags(&["--sites", "/site"]).unwrap().index_reading().access_dir, None);
    }
}
