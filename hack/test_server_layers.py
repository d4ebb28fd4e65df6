#!/usr/bin/env python3
"""Tests of hack/server-layers.py on small made-up crates: what it resolves, what it leaves out, what it reports.
Run: python3 -m unittest discover -s hack -p 'test_server_layers.py' (make verify-server-layers does)."""

import importlib.util
import os
import subprocess
import sys
import tempfile
import textwrap
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(HERE, "server-layers.py")
spec = importlib.util.spec_from_file_location("server_layers", SCRIPT)
sl = importlib.util.module_from_spec(spec)
spec.loader.exec_module(sl)


def crate(files):
    d = tempfile.mkdtemp(prefix="server-layers-test-")
    for rel, text in files.items():
        p = os.path.join(d, rel)
        os.makedirs(os.path.dirname(p), exist_ok=True)
        with open(p, "w") as f:
            f.write(textwrap.dedent(text))
    return d


def edges_of(files, tests=False):
    fs, mods = sl.scan(crate(files))
    return fs, mods, sl.graph(fs, mods, tests)


class Resolution(unittest.TestCase):
    def test_use_trees_and_inline_paths_name_files(self):
        _, _, e = edges_of({
            "lib.rs": "pub mod sys; pub mod site; pub mod answer;",
            "sys/mod.rs": "pub mod io;", "sys/io.rs": "",
            "site/mod.rs": "pub mod a;",
            "site/a.rs": "use crate::{sys::io::{self, Read}, answer};\nfn f() { crate::answer::b::g(); }",
            "answer/mod.rs": "pub mod b;", "answer/b.rs": "",
        })
        self.assertIn(("site/a.rs", "sys/io.rs"), e)
        self.assertIn(("site/a.rs", "answer/mod.rs"), e)
        self.assertIn(("site/a.rs", "answer/b.rs"), e)

    def test_comments_strings_and_tests_are_not_imports(self):
        files = {
            "lib.rs": "pub mod site; pub mod answer;",
            "site/mod.rs": (
                '// crate::answer::x\n/* crate::answer /* nested */ crate::answer */\n'
                'const S: &str = "crate::answer::y"; const R: &str = r#"crate::answer"#;\n'
                "fn f<'a>(c: char) -> bool { c == '\"' }\n"
                "#[cfg(test)]\nmod tests { use crate::answer::T; }\n"),
            "answer/mod.rs": "",
        }
        _, _, e = edges_of(files)
        self.assertEqual(e, {})
        _, _, e = edges_of(files, tests=True)
        self.assertIn(("site/mod.rs", "answer/mod.rs"), e)

    def test_a_use_alias_resolves_paths_through_it(self):
        _, _, e = edges_of({
            "lib.rs": "pub mod rules; pub mod answer;",
            "rules/mod.rs": "pub mod reply;", "rules/reply.rs": "",
            "answer/mod.rs": "use crate::rules::{self, X};\nfn f() { rules::reply::apply(); }",
        })
        self.assertIn(("answer/mod.rs", "rules/reply.rs"), e)

    def test_super_and_a_parent_using_its_children(self):
        fs, mods, e = edges_of({
            "lib.rs": "pub mod server;",
            "server/mod.rs": "mod conn; mod h2;\nuse conn::Conn;\npub struct Worker;",
            "server/conn.rs": "use super::Worker;\npub enum P { H(Box<super::h2::H2>) }",
            "server/h2.rs": "use super::conn::Conn;\npub struct H2;",
        })
        self.assertIn(("server/conn.rs", "server/mod.rs"), e)
        self.assertNotIn(("server/mod.rs", "server/conn.rs"), e)  # containment, not a dependency
        nodes = set(fs)
        self.assertEqual(sl.circles(nodes, e), [["server/conn.rs", "server/h2.rs"]])


class Report(unittest.TestCase):
    def run_script(self, files, *args):
        return subprocess.run([sys.executable, SCRIPT, "--src", crate(files), "--strict", *args],
                              capture_output=True, text=True)

    def test_a_circle_and_an_upward_import_fail(self):
        r = self.run_script({
            "lib.rs": "pub mod sys; pub mod site; pub mod answer;\npub fn serve(cfg: Config) {}",
            "sys/mod.rs": "", "site/mod.rs": "use crate::answer::X;", "answer/mod.rs": "use crate::site::Y;",
        })
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertIn("ERROR: circle of 2: answer/mod.rs site/mod.rs", r.stdout)
        self.assertIn("ERROR: site/mod.rs:1 (content) imports answer/mod.rs (core)", r.stdout)

    def test_downward_imports_pass(self):
        r = self.run_script({
            "lib.rs": "pub mod sys; pub mod site; pub mod answer;\npub fn serve(cfg: Config) {}",
            "sys/mod.rs": "", "site/mod.rs": "use crate::sys::Z;", "answer/mod.rs": "use crate::site::Y;",
        })
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn("import circles: 0", r.stdout)
        self.assertIn("upward imports: 0", r.stdout)

    def test_the_cfg_walk_counts_returns(self):
        # serve -> state (Shared::new) -> site (budget) -> back in state -> back in lib -> control (reload,
        # through the Shared) -> site (load) -> back in control -> back in lib: 4 files; returns: state, lib,
        # site, control, lib. `helper` gets a setting (cfg.listen), not the Config: not followed.
        r = self.run_script({
            "lib.rs": textwrap.dedent("""\
                pub mod site; pub mod state; pub mod control; pub mod config;
                pub fn serve(cfg: Config) -> i32 {
                    let listen = cfg.listen;
                    helper(listen);
                    let shared = Arc::new(state::Shared::new(cfg, 1));
                    control::reload(&shared, "start");
                    0
                }
                fn helper(x: u16) {}
                """),
            "config.rs": "pub struct Config;",
            "state.rs": "impl Shared { pub fn new(cfg: Config, n: usize) -> Shared {"
                        " let b = crate::site::budget(&cfg); Shared { cfg } } }",
            "control.rs": "pub fn reload(shared: &Shared, why: &str) { crate::site::load(&shared.cfg, 3); }",
            "site/mod.rs": "pub fn budget(cfg: &Config) -> u64 { 0 }\npub fn load(cfg: &Config, n: u32) {}",
        }, "--walk")
        self.assertIn("cfg walk from lib.rs serve: 4 files, 5 returns", r.stdout)


if __name__ == "__main__":
    unittest.main()
