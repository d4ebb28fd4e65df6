use hyperstatic_server::config::Config;

fn main() {
    // Help, version and usage errors exit here (clap prints them; errors exit with status 2).
    let cfg = Config::parse_from(std::env::args_os()).unwrap_or_else(|e| e.exit());
    let code = if cfg.check { hyperstatic_server::check(&cfg) } else { hyperstatic_server::serve(cfg) };
    std::process::exit(code);
}
