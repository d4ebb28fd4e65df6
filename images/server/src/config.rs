//! Configuration from flags, with `HYPERSTATIC_*` environment equivalents (flags win).
//! `--max-connection-age 30s` and `HYPERSTATIC_MAX_CONNECTION_AGE=30s` are the same setting.
//! Repeatable flags (`--cache-control`, `--header`) take newline-separated lists in the environment.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

#[derive(Debug, Clone)]
pub struct Config {
    pub root: PathBuf,
    pub listen: SocketAddr,
    pub admin_listen: SocketAddr,
    /// 0 = automatic (affinity mask capped by the cgroup quota).
    pub workers: usize,
    pub header_timeout: Duration,
    pub keepalive_timeout: Duration,
    pub max_requests_per_connection: u64,
    pub max_connection_age: Duration,
    pub drain_delay: Duration,
    pub shutdown_timeout: Duration,
    pub check: bool,
    /// (glob, value), first match wins.
    pub cache_control: Vec<(String, String)>,
    pub default_cache_control: String,
    /// Extra response headers on every file response: (glob or "*", name, value).
    pub headers: Vec<(String, String, String)>,
    pub spa_fallback: bool,
    pub not_found_page: Option<String>,
    pub max_memory_file_size: u64,
    pub compress: bool,
    pub access_log: bool,
    pub access_log_sample: u64,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            root: PathBuf::from("/site"),
            listen: "0.0.0.0:8080".parse().unwrap(),
            admin_listen: "0.0.0.0:9090".parse().unwrap(),
            workers: 0,
            header_timeout: Duration::from_secs(10),
            keepalive_timeout: Duration::from_secs(60),
            max_requests_per_connection: 10_000,
            max_connection_age: Duration::from_secs(60),
            drain_delay: Duration::from_secs(5),
            shutdown_timeout: Duration::from_secs(20),
            check: false,
            cache_control: Vec::new(),
            default_cache_control: "no-cache".into(),
            headers: Vec::new(),
            spa_fallback: false,
            not_found_page: None,
            max_memory_file_size: 8 << 20,
            compress: true,
            access_log: false,
            access_log_sample: 1,
        }
    }
}

/// What `parse` asks the caller to do.
#[derive(Debug)]
pub enum Action {
    Run(Box<Config>),
    Help,
    Version,
}

struct Flag {
    name: &'static str,
    arg: &'static str,
    help: &'static str,
}

const FLAGS: &[Flag] = &[
    Flag { name: "root", arg: "DIR", help: "Site root loaded into memory (default /site)" },
    Flag { name: "listen", arg: "ADDR", help: "HTTP listen address (default 0.0.0.0:8080)" },
    Flag { name: "admin-listen", arg: "ADDR", help: "Admin listener for /healthz /readyz /metrics /content (default 0.0.0.0:9090)" },
    Flag { name: "workers", arg: "N", help: "Worker threads; 0 = one per CPU of the affinity mask, capped by the cgroup CPU quota (default 0)" },
    Flag { name: "header-timeout", arg: "DUR", help: "Time allowed to send a complete request head; then 408 and close (default 10s)" },
    Flag { name: "keepalive-timeout", arg: "DUR", help: "Idle keep-alive connections close after this (default 60s)" },
    Flag { name: "max-requests-per-connection", arg: "N", help: "Close a connection after N requests (default 10000)" },
    Flag { name: "max-connection-age", arg: "DUR", help: "Close a connection after its next response once it is this old (default 60s)" },
    Flag { name: "drain-delay", arg: "DUR", help: "After SIGTERM: /readyz fails at once, serving goes on this long before accepting stops (default 5s)" },
    Flag { name: "shutdown-timeout", arg: "DUR", help: "After the drain delay: longest wait for open connections to finish (default 20s)" },
    Flag { name: "check", arg: "", help: "Load and validate the site, print a report, exit non-zero on error" },
    Flag { name: "cache-control", arg: "GLOB=VALUE", help: "Cache-Control for matching files; repeatable, first match wins (e.g. '/assets/**=public, max-age=31536000, immutable')" },
    Flag { name: "default-cache-control", arg: "VALUE", help: "Cache-Control when no rule matches (default no-cache)" },
    Flag { name: "header", arg: "[GLOB=]NAME: VALUE", help: "Extra response header on file responses (all files, or those matching GLOB); repeatable" },
    Flag { name: "spa-fallback", arg: "", help: "Serve /index.html (200) for paths that match no file" },
    Flag { name: "not-found-page", arg: "PATH", help: "Site file served with status 404 for unknown paths (e.g. /404.html)" },
    Flag { name: "max-memory-file-size", arg: "SIZE", help: "Files larger than this are served from disk with sendfile (default 8MiB)" },
    Flag { name: "compress", arg: "BOOL", help: "Precompress compressible files over 1 KiB with brotli and gzip at load time (default true)" },
    Flag { name: "access-log", arg: "", help: "Write a JSON access log line to stderr per (sampled) request (default off)" },
    Flag { name: "access-log-sample", arg: "N", help: "Log one request in N when the access log is on (default 1)" },
    Flag { name: "help", arg: "", help: "Show this help" },
    Flag { name: "version", arg: "", help: "Print the version" },
];

pub fn help() -> String {
    let mut s = String::from(
        "hyperstatic-server: serves a static site from memory over HTTP/1.1.\n\n\
         Usage: hyperstatic-server [FLAGS]\n\n\
         Every flag has an environment equivalent: --max-connection-age -> HYPERSTATIC_MAX_CONNECTION_AGE.\n\
         Flags win over the environment. Repeatable flags take newline-separated values in the environment.\n\
         Durations: 10s, 500ms, 1m, 1h (a bare number is seconds). Sizes: 8MiB, 512KiB, 1000000, 1M.\n\
         Booleans: true/false/1/0 (a boolean flag without value means true).\n\nFlags:\n",
    );
    for f in FLAGS {
        let left = if f.arg.is_empty() { format!("--{}", f.name) } else { format!("--{} {}", f.name, f.arg) };
        let env = if matches!(f.name, "help" | "version") {
            String::new()
        } else {
            format!(" [env HYPERSTATIC_{}]", f.name.to_uppercase().replace('-', "_"))
        };
        s.push_str(&format!("  {left:<38} {}{env}\n", f.help));
    }
    s
}

/// Parses `10s`, `500ms`, `1m`, `2h`, `1.5s`, or a bare number of seconds.
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let s = s.trim();
    let split = s.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(s.len());
    let (num, unit) = s.split_at(split);
    let n: f64 = num.parse().map_err(|_| format!("invalid duration {s:?}"))?;
    let secs = match unit {
        "" | "s" => n,
        "ms" => n / 1000.0,
        "us" | "µs" => n / 1e6,
        "m" => n * 60.0,
        "h" => n * 3600.0,
        _ => return Err(format!("invalid duration unit in {s:?} (use ms, s, m or h)")),
    };
    if !secs.is_finite() || secs < 0.0 {
        return Err(format!("invalid duration {s:?}"));
    }
    Ok(Duration::from_secs_f64(secs))
}

/// Parses `8MiB`, `512KiB`, `1M`, `1000`, ... into bytes.
pub fn parse_size(s: &str) -> Result<u64, String> {
    let s = s.trim();
    let split = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    let (num, unit) = s.split_at(split);
    let n: u64 = num.parse().map_err(|_| format!("invalid size {s:?}"))?;
    let mult = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kb" => 1000,
        "ki" | "kib" => 1024,
        "m" | "mb" => 1_000_000,
        "mi" | "mib" => 1 << 20,
        "g" | "gb" => 1_000_000_000,
        "gi" | "gib" => 1 << 30,
        _ => return Err(format!("invalid size unit in {s:?}")),
    };
    n.checked_mul(mult).ok_or_else(|| format!("size {s:?} too large"))
}

fn parse_bool(s: &str) -> Result<bool, String> {
    match s.trim().to_ascii_lowercase().as_str() {
        "" | "1" | "true" | "yes" | "on" => Ok(true),
        "0" | "false" | "no" | "off" => Ok(false),
        _ => Err(format!("invalid boolean {s:?}")),
    }
}

fn parse_header_rule(v: &str) -> Result<(String, String, String), String> {
    // "[GLOB=]Name: value" — a GLOB never contains ':' before '='.
    let (glob, rest) = match (v.find('='), v.find(':')) {
        (Some(e), Some(c)) if e < c => (v[..e].trim().to_string(), &v[e + 1..]),
        _ => ("*".to_string(), v),
    };
    let colon = rest.find(':').ok_or_else(|| format!("--header {v:?}: expected 'Name: value'"))?;
    let name = rest[..colon].trim();
    let value = rest[colon + 1..].trim();
    let token_ok = !name.is_empty()
        && name.bytes().all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b));
    if !token_ok || value.bytes().any(|b| b < 0x20 && b != b'\t') {
        return Err(format!("--header {v:?}: invalid header name or value"));
    }
    Ok((glob, name.to_string(), value.to_string()))
}

fn parse_cache_rule(v: &str) -> Result<(String, String), String> {
    let eq = v.find('=').ok_or_else(|| format!("--cache-control {v:?}: expected GLOB=VALUE"))?;
    let (glob, value) = (v[..eq].trim(), v[eq + 1..].trim());
    if glob.is_empty() || value.bytes().any(|b| b < 0x20) {
        return Err(format!("--cache-control {v:?}: invalid rule"));
    }
    Ok((glob.to_string(), value.to_string()))
}

fn is_bool_flag(name: &str) -> bool {
    matches!(name, "check" | "spa-fallback" | "access-log" | "help" | "version" | "compress")
}

/// Parses command-line `args` (without the program name) over an environment lookup.
pub fn parse(args: &[String], env: &dyn Fn(&str) -> Option<String>) -> Result<Action, String> {
    // Collect (name, value) pairs: environment first, then flags in order.
    let mut pairs: Vec<(String, String, bool)> = Vec::new(); // (name, value, from_flag)
    for f in FLAGS {
        if matches!(f.name, "help" | "version") {
            continue;
        }
        let key = format!("HYPERSTATIC_{}", f.name.to_uppercase().replace('-', "_"));
        if let Some(v) = env(&key) {
            if matches!(f.name, "cache-control" | "header") {
                for line in v.lines().map(str::trim).filter(|l| !l.is_empty()) {
                    pairs.push((f.name.to_string(), line.to_string(), false));
                }
            } else {
                pairs.push((f.name.to_string(), v, false));
            }
        }
    }
    let mut i = 0;
    while i < args.len() {
        let a = &args[i];
        let body = a.strip_prefix("--").ok_or_else(|| format!("unexpected argument {a:?} (see --help)"))?;
        let (name, inline) = match body.find('=') {
            Some(e) => (&body[..e], Some(body[e + 1..].to_string())),
            None => (body, None),
        };
        if !FLAGS.iter().any(|f| f.name == name) {
            return Err(format!("unknown flag --{name} (see --help)"));
        }
        if name == "help" {
            return Ok(Action::Help);
        }
        if name == "version" {
            return Ok(Action::Version);
        }
        let value = match inline {
            Some(v) => v,
            None if is_bool_flag(name) => "true".to_string(),
            None => {
                i += 1;
                args.get(i).cloned().ok_or_else(|| format!("--{name} needs a value"))?
            }
        };
        pairs.push((name.to_string(), value, true));
        i += 1;
    }
    // Repeatable flags given on the command line replace the environment's list.
    for rep in ["cache-control", "header"] {
        if pairs.iter().any(|(n, _, f)| n == rep && *f) {
            pairs.retain(|(n, _, f)| n != rep || *f);
        }
    }
    let mut c = Config::default();
    for (name, v, _) in pairs {
        let bad = |e: String| format!("--{name}: {e}");
        match name.as_str() {
            "root" => c.root = PathBuf::from(v),
            "listen" => c.listen = v.parse().map_err(|_| format!("--listen: invalid address {v:?}"))?,
            "admin-listen" => {
                c.admin_listen = v.parse().map_err(|_| format!("--admin-listen: invalid address {v:?}"))?
            }
            "workers" => c.workers = v.trim().parse().map_err(|_| format!("--workers: invalid number {v:?}"))?,
            "header-timeout" => c.header_timeout = parse_duration(&v).map_err(bad)?,
            "keepalive-timeout" => c.keepalive_timeout = parse_duration(&v).map_err(bad)?,
            "max-requests-per-connection" => {
                c.max_requests_per_connection =
                    v.trim().parse().map_err(|_| format!("--max-requests-per-connection: invalid number {v:?}"))?
            }
            "max-connection-age" => c.max_connection_age = parse_duration(&v).map_err(bad)?,
            "drain-delay" => c.drain_delay = parse_duration(&v).map_err(bad)?,
            "shutdown-timeout" => c.shutdown_timeout = parse_duration(&v).map_err(bad)?,
            "check" => c.check = parse_bool(&v).map_err(bad)?,
            "cache-control" => c.cache_control.push(parse_cache_rule(&v)?),
            "default-cache-control" => c.default_cache_control = v.trim().to_string(),
            "header" => c.headers.push(parse_header_rule(&v)?),
            "spa-fallback" => c.spa_fallback = parse_bool(&v).map_err(bad)?,
            "not-found-page" => {
                let p = v.trim();
                c.not_found_page = if p.is_empty() {
                    None
                } else if p.starts_with('/') {
                    Some(p.to_string())
                } else {
                    Some(format!("/{p}"))
                }
            }
            "max-memory-file-size" => c.max_memory_file_size = parse_size(&v).map_err(bad)?,
            "compress" => c.compress = parse_bool(&v).map_err(bad)?,
            "access-log" => c.access_log = parse_bool(&v).map_err(bad)?,
            "access-log-sample" => {
                c.access_log_sample =
                    v.trim().parse::<u64>().map_err(|_| format!("--access-log-sample: invalid number {v:?}"))?.max(1)
            }
            _ => unreachable!("flag table and match disagree on {name}"),
        }
    }
    if c.header_timeout.is_zero() || c.keepalive_timeout.is_zero() {
        return Err("timeouts must be greater than zero".into());
    }
    if c.max_requests_per_connection == 0 {
        return Err("--max-requests-per-connection must be at least 1".into());
    }
    Ok(Action::Run(Box::new(c)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(args: &[&str], env: &[(&str, &str)]) -> Result<Config, String> {
        let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
        let env: Vec<(String, String)> = env.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        match parse(&args, &|k| env.iter().find(|(ek, _)| ek == k).map(|(_, v)| v.clone()))? {
            Action::Run(c) => Ok(*c),
            a => Err(format!("{a:?}")),
        }
    }

    #[test]
    fn defaults() {
        let c = run(&[], &[]).unwrap();
        assert_eq!(c.root, PathBuf::from("/site"));
        assert_eq!(c.listen.to_string(), "0.0.0.0:8080");
        assert_eq!(c.admin_listen.to_string(), "0.0.0.0:9090");
        assert_eq!(c.header_timeout, Duration::from_secs(10));
        assert_eq!(c.keepalive_timeout, Duration::from_secs(60));
        assert_eq!(c.max_requests_per_connection, 10_000);
        assert_eq!(c.max_connection_age, Duration::from_secs(60));
        assert_eq!(c.drain_delay, Duration::from_secs(5));
        assert_eq!(c.max_memory_file_size, 8 << 20);
    }

    #[test]
    fn flags_override_env() {
        let c = run(
            &["--root", "/x", "--workers=3", "--header-timeout", "500ms", "--check"],
            &[("HYPERSTATIC_ROOT", "/env"), ("HYPERSTATIC_DRAIN_DELAY", "1m"), ("HYPERSTATIC_WORKERS", "9")],
        )
        .unwrap();
        assert_eq!(c.root, PathBuf::from("/x"));
        assert_eq!(c.workers, 3);
        assert_eq!(c.header_timeout, Duration::from_millis(500));
        assert_eq!(c.drain_delay, Duration::from_secs(60));
        assert!(c.check);
    }

    #[test]
    fn repeatable_rules() {
        let c = run(&[], &[("HYPERSTATIC_CACHE_CONTROL", "*.html=no-cache\n/assets/**=public, max-age=31536000")]).unwrap();
        assert_eq!(c.cache_control.len(), 2);
        assert_eq!(c.cache_control[1], ("/assets/**".into(), "public, max-age=31536000".into()));
        let c = run(&["--header", "X-Frame-Options: DENY", "--header", "*.js=X-A: b=c"], &[]).unwrap();
        assert_eq!(c.headers[0], ("*".into(), "X-Frame-Options".into(), "DENY".into()));
        assert_eq!(c.headers[1], ("*.js".into(), "X-A".into(), "b=c".into()));
        assert!(run(&["--header", "Bad Name: x"], &[]).is_err());
    }

    #[test]
    fn durations_and_sizes() {
        assert_eq!(parse_duration("10s").unwrap(), Duration::from_secs(10));
        assert_eq!(parse_duration("500ms").unwrap(), Duration::from_millis(500));
        assert_eq!(parse_duration("1m").unwrap(), Duration::from_secs(60));
        assert_eq!(parse_duration("2").unwrap(), Duration::from_secs(2));
        assert!(parse_duration("10x").is_err());
        assert!(parse_duration("").is_err());
        assert_eq!(parse_size("8MiB").unwrap(), 8 << 20);
        assert_eq!(parse_size("1k").unwrap(), 1000);
        assert!(parse_size("1q").is_err());
    }

    #[test]
    fn errors_and_help() {
        assert!(run(&["--nope"], &[]).is_err());
        assert!(run(&["--listen", "nothing"], &[]).is_err());
        assert!(run(&["--workers"], &[]).is_err());
        assert!(run(&["--keepalive-timeout", "0s"], &[]).is_err());
        let h = help();
        for f in ["--root", "--listen", "--admin-listen", "--workers", "--header-timeout", "--keepalive-timeout",
                  "--max-requests-per-connection", "--max-connection-age", "--drain-delay", "--check"] {
            assert!(h.contains(f), "{f} missing from help");
        }
        assert!(matches!(parse(&["--help".to_string()], &|_| None), Ok(Action::Help)));
    }
}
