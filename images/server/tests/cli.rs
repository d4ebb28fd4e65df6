//! The command line is a contract with the operator (controllers/staticsite/defaults.go, ServerArgs): the real
//! binary must accept the arguments it builds. `--check` loads the site and exits, so no port is bound.

use std::process::Command;

fn example_site() -> String {
    format!("{}/example/site", env!("CARGO_MANIFEST_DIR"))
}

#[test]
fn accepts_the_operators_arguments() {
    let out = Command::new(env!("CARGO_BIN_EXE_hyperstatic-server"))
        .args(["--root", &example_site(), "--listen", "0.0.0.0:8080", "--admin-listen", "0.0.0.0:9090"])
        .args(["--drain-delay", "5s", "--shutdown-timeout", "1500ms"])
        .args(["--max-requests-per-connection", "1000", "--max-connection-age", "90s"])
        .args([
            "--cache-control",
            "/assets/**=public, max-age=31536000, immutable",
            "--cache-control",
            "*.html=no-cache",
        ])
        .args(["--header", "X-Frame-Options:DENY", "--header", "Content-Security-Policy:default-src 'self'"])
        .args(["--spa-fallback", "--not-found-page", "/index.html", "--check"])
        .env_clear()
        .output()
        .unwrap();
    assert!(out.status.success(), "{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stdout).contains("ok"));
}

#[test]
fn a_bad_value_names_its_flag_and_exits_2() {
    for (flag, value) in [("--drain-delay", "5 seconds"), ("--cache-control", "no-glob"), ("--header", "X-A")] {
        let out = Command::new(env!("CARGO_BIN_EXE_hyperstatic-server"))
            .args(["--root", &example_site(), "--check", flag, value])
            .env_clear()
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{flag} {value}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(flag), "{flag} {value}: {err}");
    }
}

/// Headers the server frames, negotiates or validates with are its own: `--header` refuses them at parse time,
/// naming the flag, as `_headers` does by line.
#[test]
fn header_refuses_the_headers_the_server_owns() {
    for value in
        ["Content-Length: 3", "transfer-encoding: chunked", "*.js=Connection: close", "Content-Encoding: br", "Date: x"]
    {
        let out = Command::new(env!("CARGO_BIN_EXE_hyperstatic-server"))
            .args(["--root", &example_site(), "--check", "--header", value])
            .env_clear()
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{value}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("--header") && err.contains("is set by the server"), "{value}: {err}");
    }
}
