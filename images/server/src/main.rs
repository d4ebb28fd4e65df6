use hyperstatic_server::config::{self, Action};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let action = match config::parse(&args, &|k| std::env::var(k).ok()) {
        Ok(a) => a,
        Err(e) => {
            hyperstatic_server::log::error("invalid configuration (see --help)", &[("error", hyperstatic_server::log::V::S(&e))]);
            std::process::exit(2);
        }
    };
    let code = match action {
        Action::Help => {
            print!("{}", config::help());
            0
        }
        Action::Version => {
            println!("hyperstatic-server {}", env!("CARGO_PKG_VERSION"));
            0
        }
        Action::Run(cfg) if cfg.check => hyperstatic_server::check(&cfg),
        Action::Run(cfg) => hyperstatic_server::serve(*cfg),
    };
    std::process::exit(code);
}
