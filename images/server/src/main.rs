//! The binary: `hyperstatic-server precompress DIR` (compress/precompress.rs), `--check`, or serve (lib.rs).

use hyperstatic_server::config::Config;

fn main() {
    // `precompress DIR` is a build-time tool with its own flags; everything else is the server's command line.
    let mut args = std::env::args_os();
    if std::env::args_os().nth(1).is_some_and(|a| a == "precompress") {
        std::process::exit(hyperstatic_server::compress::precompress::main(args.by_ref().skip(2)));
    }
    // Help, version and usage errors exit here (clap prints them; errors exit with status 2).
    let cfg = Config::parse_from(args).unwrap_or_else(|e| e.exit());
    let code = if cfg.check { hyperstatic_server::check(&cfg) } else { hyperstatic_server::serve(cfg) };
    std::process::exit(code);
}
