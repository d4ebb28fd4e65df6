//! What the access rules add to a request (src/guard/): the check of a public path (no rule covers it), of a
//! path under a single sign-on rule with a good session cookie (HMAC-SHA256 of the cookie's body, the expiry, the
//! groups: guard/session.rs), and of a path under a basic-auth rule answered from the worker's table (a hit).
//! The goal (a protected request within 10 % of a public one per server CPU) is about the whole request;
//! this measures the part that differs, in ns per check, to compare with a whole request's CPU time.
//!
//! Run: `cargo bench --bench access` (release profile). It prints the best and median ns per check of several
//! interleaved rounds; the best is the figure to compare on a busy machine.

use std::hint::black_box;
use std::time::Instant;

use base64::Engine as _;
use hyperstatic_server::guard::{self, session, Access, Sso, Verified};

/// A request as the rules see it: a name, the path, `Authorization`, the session cookie.
type Case<'a> = (&'a str, &'a [u8], Option<&'a [u8]>, Option<&'a [u8]>);

fn main() {
    let key = base64::engine::general_purpose::STANDARD.encode([7u8; 32]);
    let keys = session::Keys::parse(&key).unwrap();
    let rule = |prefix: &str, sign_in: Option<guard::SignIn>, challenge: Option<String>| guard::Rule {
        prefix: guard::parse_prefix(prefix).unwrap(),
        allow: vec![],
        deny: vec![],
        challenge,
        sign_in,
    };
    let eng = guard::SignIn { groups: vec![b"eng".to_vec()], email_domains: vec![] };
    let mut a = Access::new(
        vec![rule("/team/", Some(eng), None), rule("/basic/", None, Some(guard::basic::challenge("R")))],
        vec![],
        None,
    );
    a.sso = Some(Sso {
        login_url: "/.hyperstatic/sso/login".into(),
        challenge: "Session".into(),
        keys_file: "keys".into(),
        keys: Some(keys.clone()),
    });
    let hash = bcrypt::hash("pw", 4).unwrap();
    a.users = Some(guard::Users::parse(&format!("u:{hash}")).unwrap());
    let body = "1|9999999999|jane.doe@example.com|ops:platform:eng";
    let cookie = format!("{body}|{}", keys.sign(body.as_bytes()));
    let basic = b"Basic dTpwdw==";
    let mut v = Verified::new();
    assert_eq!(a.check(&mut v, b"/team/doc.html", None, None, Some(cookie.as_bytes())), guard::Verdict::Private);
    assert_eq!(a.check(&mut v, b"/basic/x", None, Some(basic), None), guard::Verdict::Private);
    assert_eq!(a.check(&mut v, b"/pub.txt", None, None, None), guard::Verdict::Public);

    let cases: [Case; 3] = [
        ("public path", b"/pub.txt", None, None),
        ("signIn, good cookie", b"/team/doc.html", None, Some(cookie.as_bytes())),
        ("basicAuth, table hit", b"/basic/x", Some(basic), None),
    ];
    let iters = 200_000;
    let mut ns: Vec<Vec<f64>> = vec![Vec::new(); cases.len()];
    for _ in 0..15 {
        for (i, (_, path, auth, sess)) in cases.iter().enumerate() {
            let start = Instant::now();
            for _ in 0..iters {
                black_box(a.check(&mut v, black_box(path), None, black_box(*auth), black_box(*sess)));
            }
            ns[i].push(start.elapsed().as_nanos() as f64 / iters as f64);
        }
    }
    println!("{:<24} {:>10} {:>10}", "ns/check", "best", "median");
    for ((name, ..), mut n) in cases.iter().zip(ns) {
        n.sort_by(f64::total_cmp);
        println!("{name:<24} {:>10.1} {:>10.1}", n[0], n[n.len() / 2]);
    }
}
