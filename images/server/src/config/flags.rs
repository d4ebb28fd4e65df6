//! The command line as clap sees it. Flag names, value syntax and defaults are a contract: the operator builds
//! them (controllers/staticsite/serverargs.go, ServerArgs) and users pass more through `spec.server.extraArgs`.
//! Every flag reads `HYPERSTATIC_<NAME>` when it is not on the command line.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use clap::{ArgAction, Parser};

use super::values::{
    at_least_one, number, parse_bool, parse_duration, parse_limit_size, parse_size, port, positive_duration,
};

const AFTER_HELP: &str = "\
Every flag can be set in the environment instead: HYPERSTATIC_ and the flag's name in capitals, dashes as \
underscores (--max-connection-age: HYPERSTATIC_MAX_CONNECTION_AGE). Flags win over the environment. The \
repeatable flags (--cache-control, --header, --cors, --redirect, --error-page) take one rule per line in the \
environment; on the command line, any of them replaces the environment's whole list. A flag given twice keeps \
its last value.
Durations: 10s, 500ms, 1m, 1h, 1.5s (a bare number is seconds). Sizes: 8MiB, 512KiB, 1000000, 1M.
Booleans: --flag, --flag=true, --flag=false (also 1/0, yes/no, on/off).
Globs: a pattern without '/' matches the file name at any depth (*.html); with '/' it matches the URL path \
(/assets/**). '*' and '?' stay within a segment, '**' crosses segments; every other character is literal.";

/// What `hyperstatic-server --help` says first: what the program does, for the people who run it.
const LONG_ABOUT: &str = "\
Serves the static site under --root over HTTP/1.1, and over HTTPS when --tls-cert and --tls-key are given. The \
whole site is read into memory at start (files above --max-memory-file-size or beyond the memory budget are sent \
from disk), every response header is prepared then, and changed files are picked up live (inotify, or SIGHUP). \
/healthz, /readyz and /metrics are on --admin-listen. SIGTERM drains: readiness fails, serving goes on for \
--drain-delay (with --drain-hold: until POST /drain/release, then --drain-delay), then open connections get up to \
--shutdown-timeout to finish.

hyperstatic-server --check --root DIR loads and validates a site, prints a report and exits 1 on problems. \
hyperstatic-server precompress [--force] DIR writes .br, .zst and .gz siblings next to the files worth it, for \
an image build.";

// Raw flags; `from_flags` in config.rs turns them into a `Config` (and checks the rules). Plain comments, not a
// doc comment: clap would print a doc comment as the long `--help` text, and that text is for users
// (LONG_ABOUT).
//
// Every flag that takes a value takes the next argument, even one starting with `-`: the StaticSite API admits
// header names and globs like `-X-A` and `-draft-*.html`, and a flag given twice keeps the last value.
#[derive(Parser, Debug)]
#[command(
    name = "hyperstatic-server",
    version,
    about = "Serves a static site from memory over HTTP/1.1 and HTTPS.",
    long_about = LONG_ABOUT,
    after_help = AFTER_HELP,
    // A flag given twice: the last one wins, as it always has. `spec.server.extraArgs` come after the operator's
    // own flags and rely on this to override them.
    args_override_self = true
)]
pub(super) struct Flags {
    /// Site root, loaded into memory
    #[arg(long, allow_hyphen_values = true, env = "HYPERSTATIC_ROOT", value_name = "DIR", default_value = "/site")]
    pub root: PathBuf,

    /// HTTP listen address; port 0 picks a free port; [::] is dual-stack (0.0.0.0 when IPv6 is off)
    #[arg(
        long,
        allow_hyphen_values = true,
        env = "HYPERSTATIC_LISTEN",
        value_name = "ADDR",
        default_value = "[::]:8080"
    )]
    pub listen: SocketAddr,

    /// Admin listener for /healthz /readyz /metrics /content (address rules as --listen)
    #[arg(
        long,
        allow_hyphen_values = true,
        env = "HYPERSTATIC_ADMIN_LISTEN",
        value_name = "ADDR",
        default_value = "[::]:9090"
    )]
    pub admin_listen: SocketAddr,

    /// Worker threads; 0 = one per CPU of the affinity mask, capped by the cgroup CPU quota
    #[arg(long, allow_hyphen_values = true, env = "HYPERSTATIC_WORKERS", value_name = "N", default_value = "0", value_parser = number::<usize>)]
    pub workers: usize,

    /// Time allowed to send a complete request head; then 408 and close
    #[arg(long, allow_hyphen_values = true, env = "HYPERSTATIC_HEADER_TIMEOUT", value_name = "DUR", default_value = "10s", value_parser = positive_duration)]
    pub header_timeout: Duration,

    /// Idle keep-alive connections close after this
    #[arg(long, allow_hyphen_values = true, env = "HYPERSTATIC_KEEPALIVE_TIMEOUT", value_name = "DUR", default_value = "60s", value_parser = positive_duration)]
    pub keepalive_timeout: Duration,

    /// Close a connection after N requests
    #[arg(long, allow_hyphen_values = true, env = "HYPERSTATIC_MAX_REQUESTS_PER_CONNECTION", value_name = "N", default_value = "10000", value_parser = at_least_one)]
    pub max_requests_per_connection: u64,

    /// Connections one worker holds at most. At the cap a new connection evicts one with no response in flight
    /// (waiting for its head, mid-handshake, idle); when there is none it is closed and counted in
    /// hyperstatic_connections_refused_total
    #[arg(long, allow_hyphen_values = true, env = "HYPERSTATIC_MAX_CONNECTIONS_PER_WORKER", value_name = "N", default_value = "16384", value_parser = at_least_one)]
    pub max_connections_per_worker: u64,

    /// Close a connection after its next response once it is this old
    #[arg(long, allow_hyphen_values = true, env = "HYPERSTATIC_MAX_CONNECTION_AGE", value_name = "DUR", default_value = "60s", value_parser = parse_duration)]
    pub max_connection_age: Duration,

    /// After SIGTERM: /readyz fails at once, serving goes on this long before accepting stops
    #[arg(long, allow_hyphen_values = true, env = "HYPERSTATIC_DRAIN_DELAY", value_name = "DUR", default_value = "5s", value_parser = parse_duration)]
    pub drain_delay: Duration,

    /// After SIGTERM, hold the drain: serving goes on until the drain is released (POST /drain/release on the
    /// admin listener) and the drain delay after that, or this long at most (0: no hold). A pool pod's operator
    /// releases it once no EndpointSlice lists the pod any more
    #[arg(long, allow_hyphen_values = true, env = "HYPERSTATIC_DRAIN_HOLD", value_name = "DUR", default_value = "0s", value_parser = parse_duration)]
    pub drain_hold: Duration,

    /// After the drain delay: longest wait for open connections to finish
    #[arg(long, allow_hyphen_values = true, env = "HYPERSTATIC_SHUTDOWN_TIMEOUT", value_name = "DUR", default_value = "20s", value_parser = parse_duration)]
    pub shutdown_timeout: Duration,

    /// Load and validate the site, print a report, exit non-zero on error
    #[arg(long, env = "HYPERSTATIC_CHECK", value_name = "BOOL", num_args = 0..=1, require_equals = true,
          default_value = "false", default_missing_value = "true", value_parser = parse_bool, action = ArgAction::Set)]
    pub check: bool,

    /// The site value file (JSON, docs/design/site-value.md): the site's rules, reloaded live when it changes;
    /// the site-rule flags below build the same value and may not be given with it
    #[arg(long, allow_hyphen_values = true, env = "HYPERSTATIC_SITE", value_name = "FILE")]
    pub site: Option<PathBuf>,

    /// Serve a shared pool: every site of DIR/index/*.json, chosen by Host, each from DIR/content/<id>/current
    /// (docs/design/pools.md); not with --root, --site or the site-rule flags
    #[arg(long, allow_hyphen_values = true, env = "HYPERSTATIC_SITES", value_name = "DIR")]
    pub sites: Option<PathBuf>,

    /// With --sites: the directory an index entry's access files (access.htpasswdFile, access.sso.keysFile) are
    /// read from, by plain file name. A site's own pods with previews give it (the puller writes the files there);
    /// a shared pool does not, and refuses every entry that names one
    #[arg(long, allow_hyphen_values = true, env = "HYPERSTATIC_SITES_ACCESS_DIR", value_name = "DIR")]
    pub sites_access_dir: Option<PathBuf>,

    /// Cache-Control for matching files; repeatable, first match wins (e.g. '/assets/**=public, max-age=31536000, immutable')
    #[arg(long, allow_hyphen_values = true, env = "HYPERSTATIC_CACHE_CONTROL", value_name = "GLOB=VALUE")]
    pub cache_control: Vec<String>,

    /// Cache-Control when no rule matches
    #[arg(
        long,
        allow_hyphen_values = true,
        env = "HYPERSTATIC_DEFAULT_CACHE_CONTROL",
        value_name = "VALUE",
        default_value = "no-cache"
    )]
    pub default_cache_control: String,

    /// Extra response header on file responses (all files, or those matching GLOB); repeatable
    #[arg(long, allow_hyphen_values = true, env = "HYPERSTATIC_HEADER", value_name = "[GLOB=]NAME: VALUE")]
    pub header: Vec<String>,

    /// Serve /index.html (200) for missing paths that look like page navigations (no file extension, or Accept
    /// preferring text/html); missing assets stay 404
    #[arg(long, env = "HYPERSTATIC_SPA_FALLBACK", value_name = "BOOL", num_args = 0..=1, require_equals = true,
          default_value = "false", default_missing_value = "true", value_parser = parse_bool, action = ArgAction::Set)]
    pub spa_fallback: bool,

    /// Site file served with status 404 for unknown paths (e.g. /404.html)
    #[arg(long, allow_hyphen_values = true, env = "HYPERSTATIC_NOT_FOUND_PAGE", value_name = "PATH")]
    pub not_found_page: Option<String>,

    /// Files larger than this are served from disk with sendfile
    #[arg(long, allow_hyphen_values = true, env = "HYPERSTATIC_MAX_MEMORY_FILE_SIZE", value_name = "SIZE", default_value = "8MiB", value_parser = parse_size)]
    pub max_memory_file_size: u64,

    /// Most directory entries (files, directories, links) a content load reads; a bigger tree is refused, naming
    /// the limit and the path (a reload keeps the previous content)
    #[arg(long, allow_hyphen_values = true, env = "HYPERSTATIC_MAX_ENTRIES", value_name = "N", default_value = "100000", value_parser = at_least_one)]
    pub max_entries: u64,

    /// Deepest directory below --root a content load enters; a deeper tree is refused like one with too many
    /// entries
    #[arg(long, allow_hyphen_values = true, env = "HYPERSTATIC_MAX_DEPTH", value_name = "N", default_value = "64", value_parser = number::<u64>)]
    pub max_depth: u64,

    /// Bytes for the per-client buckets of sites with limits.perClient in their site value, shared out equally
    /// among the workers and allocated at start (64 bytes hold 4 clients; past that, the fullest buckets are
    /// forgotten first)
    #[arg(long, allow_hyphen_values = true, env = "HYPERSTATIC_CLIENT_TABLE_SIZE", value_name = "SIZE", default_value = "1MiB", value_parser = parse_size)]
    pub client_table_size: u64,

    /// Memory limit to keep within, overriding the cgroup's (bytes or Ki/Mi/Gi; none = no limit)
    #[arg(long, allow_hyphen_values = true, env = "HYPERSTATIC_MEMORY_LIMIT", value_name = "SIZE", value_parser = parse_limit_size)]
    pub memory_limit: Option<u64>,

    /// Bytes of content held in memory, overriding the automatic budget (0 = serve every file from disk)
    #[arg(long, allow_hyphen_values = true, env = "HYPERSTATIC_MEMORY_BUDGET", value_name = "SIZE", value_parser = parse_size)]
    pub memory_budget: Option<u64>,

    /// Encode compressible files over 1 KiB with brotli, zstd and gzip in the background, after the site is served
    /// (files with .br/.gz/.zst siblings, e.g. from `precompress`, need no work)
    #[arg(long, env = "HYPERSTATIC_COMPRESS", value_name = "BOOL", num_args = 0..=1, require_equals = true,
          default_value = "true", default_missing_value = "true", value_parser = parse_bool, action = ArgAction::Set)]
    pub compress: bool,

    /// Writable directory keeping background encodings by content hash, so a restart or reload does not redo them
    #[arg(long, allow_hyphen_values = true, env = "HYPERSTATIC_COMPRESS_CACHE", value_name = "DIR")]
    pub compress_cache: Option<PathBuf>,

    /// File the error that stops the first content load is written to before the process exits; by default
    /// /dev/termination-log when that file exists (Kubernetes creates it in every container and shows what is
    /// written there as the container's termination message)
    #[arg(long, allow_hyphen_values = true, env = "HYPERSTATIC_TERMINATION_LOG", value_name = "PATH")]
    pub termination_log: Option<PathBuf>,

    /// Send the default security headers (X-Content-Type-Options, Referrer-Policy, Permissions-Policy; no CSP);
    /// on unless set to false
    #[arg(long, env = "HYPERSTATIC_SECURITY_HEADERS", value_name = "BOOL", num_args = 0..=1, require_equals = true,
          default_value = "true", default_missing_value = "true", value_parser = parse_bool, action = ArgAction::Set)]
    pub security_headers: bool,

    /// CORS for matching files; repeatable, first match wins (e.g. '/fonts/**=*' or
    /// '/api/**=https://a.example;methods=GET,HEAD;headers=X-Token;max-age=600')
    #[arg(long, allow_hyphen_values = true, env = "HYPERSTATIC_CORS", value_name = "GLOB=ORIGINS[;KEY=VALUE]")]
    pub cors: Vec<String>,

    /// Write a JSON access log line to stderr per (sampled) request
    #[arg(long, env = "HYPERSTATIC_ACCESS_LOG", value_name = "BOOL", num_args = 0..=1, require_equals = true,
          default_value = "false", default_missing_value = "true", value_parser = parse_bool, action = ArgAction::Set)]
    pub access_log: bool,

    /// Log one request in N when the access log is on (0 counts as 1)
    #[arg(long, allow_hyphen_values = true, env = "HYPERSTATIC_ACCESS_LOG_SAMPLE", value_name = "N", default_value = "1", value_parser = number::<u64>)]
    pub access_log_sample: u64,

    /// PEM certificate chain for HTTPS (needs --tls-key); rotation is picked up without a restart
    #[arg(long, allow_hyphen_values = true, env = "HYPERSTATIC_TLS_CERT", value_name = "PATH")]
    pub tls_cert: Option<PathBuf>,

    /// PEM private key (PKCS#8, PKCS#1 or SEC1) of --tls-cert
    #[arg(long, allow_hyphen_values = true, env = "HYPERSTATIC_TLS_KEY", value_name = "PATH")]
    pub tls_key: Option<PathBuf>,

    /// HTTPS listen address (used when --tls-cert and --tls-key are given); port 0 picks a free port; [::] as --listen
    #[arg(
        long,
        allow_hyphen_values = true,
        env = "HYPERSTATIC_TLS_LISTEN",
        value_name = "ADDR",
        default_value = "[::]:8443"
    )]
    pub tls_listen: SocketAddr,

    /// Answer every request on --listen with 308 to the same URL over https (needs TLS)
    #[arg(long, env = "HYPERSTATIC_HTTPS_REDIRECT", value_name = "BOOL", num_args = 0..=1, require_equals = true,
          default_value = "false", default_missing_value = "true", value_parser = parse_bool, action = ArgAction::Set)]
    pub https_redirect: bool,

    /// Port in the --https-redirect Location (left out of the URL when 443)
    #[arg(long, allow_hyphen_values = true, env = "HYPERSTATIC_HTTPS_REDIRECT_PORT", value_name = "N", default_value = "443", value_parser = number::<u16>)]
    pub https_redirect_port: u16,

    /// Offer HTTP/2 on the TLS listener: ALPN `h2` (preferred) and `http/1.1`; false offers `http/1.1` only
    #[arg(long, env = "HYPERSTATIC_HTTP2", value_name = "BOOL", num_args = 0..=1, require_equals = true,
          default_value = "true", default_missing_value = "true", value_parser = parse_bool, action = ArgAction::Set)]
    pub http2: bool,

    /// Serve HTTP/3 on UDP on the --tls-listen port (needs TLS) and advertise it with Alt-Svc on HTTPS responses
    #[arg(long, env = "HYPERSTATIC_HTTP3", value_name = "BOOL", num_args = 0..=1, require_equals = true,
          default_value = "false", default_missing_value = "true", value_parser = parse_bool, action = ArgAction::Set)]
    pub http3: bool,

    /// The UDP port --http3 is advertised on in Alt-Svc: the one visitors reach, when a Service or load balancer
    /// maps another port to --tls-listen's (default: the --tls-listen port). Needs --http3
    #[arg(long, allow_hyphen_values = true, env = "HYPERSTATIC_ALT_SVC_PORT", value_name = "N", value_parser = port)]
    pub alt_svc_port: Option<u16>,

    /// With --http3: ask clients whose QUIC supports the ACK frequency extension (they advertise min_ack_delay) to
    /// acknowledge every Nth packet instead of every second (a gap is still acknowledged at once). 0, the default,
    /// asks nothing: with a client that honours it, transfers over a lossy path took longer
    /// (docs/bench/h3-ack-2026-12-03.md)
    #[arg(long, env = "HYPERSTATIC_HTTP3_ACK_EVERY", value_name = "N", default_value = "0", value_parser = number::<u32>)]
    pub http3_ack_every: u32,

    /// With --http3: accept 0-RTT (early data) from a client resuming a session of this process, saving it a round
    /// trip. Each session ticket is good for one resumption (kept in the process, not encrypted into the ticket), so a
    /// replayed first flight resumes nothing; a request sent early may still arrive twice, so one that arrives in
    /// early data is served only for GET and HEAD, anything else gets `425 Too Early` (RFC 8470) and is retried by
    /// the client after the handshake
    #[arg(long, env = "HYPERSTATIC_HTTP3_EARLY_DATA", value_name = "BOOL", num_args = 0..=1, require_equals = true,
          default_value = "false", default_missing_value = "true", value_parser = parse_bool, action = ArgAction::Set)]
    pub http3_early_data: bool,

    /// Also accept HTTP/2 with prior knowledge (h2c) on --listen: a connection whose first bytes are the
    /// client preface speaks HTTP/2 (no `Upgrade: h2c`)
    #[arg(long, env = "HYPERSTATIC_H2C", value_name = "BOOL", num_args = 0..=1, require_equals = true,
          default_value = "false", default_missing_value = "true", value_parser = parse_bool, action = ArgAction::Set)]
    pub h2c: bool,

    /// Every connection to --listen and --tls-listen starts with a PROXY protocol v2 header (from a load balancer
    /// that sends one): its source address is the client's, for the per-client limits and the access log; a
    /// connection without a valid header is closed. Only for listeners nothing but that load balancer can reach
    #[arg(long, env = "HYPERSTATIC_PROXY_PROTOCOL", value_name = "BOOL", num_args = 0..=1, require_equals = true,
          default_value = "false", default_missing_value = "true", value_parser = parse_bool, action = ArgAction::Set)]
    pub proxy_protocol: bool,

    /// Strict-Transport-Security value sent on HTTPS responses (e.g. 'max-age=31536000; includeSubDomains')
    #[arg(long, allow_hyphen_values = true, env = "HYPERSTATIC_HSTS", value_name = "VALUE")]
    pub hsts: Option<String>,

    /// Redirect or rewrite rule, `_redirects` syntax: 'FROM TO [STATUS][!]' (status 301 by default; 200
    /// rewrites; `!` applies even where a file exists); repeatable, before the site's own `_redirects`
    #[arg(long, allow_hyphen_values = true, env = "HYPERSTATIC_REDIRECT", value_name = "FROM TO [STATUS]")]
    pub redirect: Vec<String>,

    /// Serve /about from about.html; /about.html and /about/ redirect (301) to /about
    #[arg(long, env = "HYPERSTATIC_CLEAN_URLS", value_name = "BOOL", num_args = 0..=1, require_equals = true,
          default_value = "false", default_missing_value = "true", value_parser = parse_bool, action = ArgAction::Set)]
    pub clean_urls: bool,

    /// Site page served with STATUS (400, 403, 404, 405, 414) for requests under PATH_PREFIX (default /); repeatable,
    /// the longest prefix wins
    #[arg(long, allow_hyphen_values = true, env = "HYPERSTATIC_ERROR_PAGE", value_name = "STATUS PATH [PATH_PREFIX]")]
    pub error_page: Vec<String>,
}
