//! `askgate serve --config FILE`, `askgate config check` and `askgate config example`, run as
//! a user runs them: the file's settings used, a flag or a variable over them, faults named
//! with their line and refused with exit status 2.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};

use askgate_testkit::http::http_text;

use crate::support::cli::until_listening;
use crate::support::{free_port, remove_scratch, tempdir};

/// `askgate ARGS` run to its end in `dir`.
fn askgate_in(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_askgate"))
        .args(args)
        .current_dir(dir)
        .env_remove("ASKGATE_CONFIG")
        .output()
        .expect("askgate runs")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// A gateway started with `args` and the environment `env`, killed when dropped.
struct Started {
    child: Child,
    /// The first address it said it listens on.
    addr: SocketAddr,
}

impl Drop for Started {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `askgate serve ARGS` in `dir`, once it says where it listens; or everything it said, and
/// its exit status, if it stopped first.
fn serve(
    dir: &Path,
    args: &[&str],
    env: &[(&str, &str)],
) -> Result<Started, (Option<i32>, String)> {
    let mut child = Command::new(env!("CARGO_BIN_EXE_askgate"))
        .arg("serve")
        .args(args)
        .current_dir(dir)
        .env_remove("ASKGATE_CONFIG")
        .env_remove("ASKGATE_LISTEN")
        .env("ASKGATE_LOG_FORMAT", "text")
        .envs(env.iter().copied())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("askgate serve starts");
    match until_listening(&mut child) {
        Ok((addr, _)) => Ok(Started { child, addr }),
        Err(said) => {
            let status = child.wait().expect("it ended");
            Err((status.code(), said))
        }
    }
}

/// A scratch directory, removed when dropped.
struct Scratch(PathBuf);

impl Scratch {
    fn new(name: &str) -> Scratch {
        Scratch(tempdir(name))
    }

    fn write(&self, name: &str, contents: &str) -> PathBuf {
        let path = self.0.join(name);
        std::fs::write(&path, contents).expect("the file is written");
        path
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        remove_scratch(&self.0);
    }
}

/// The file's listen address is the one served (its port free a moment before: taken by
/// then, which is rare, the start is tried again with another).
fn started_from_file(dir: &Scratch, args: &[&str], env: &[(&str, &str)]) -> (Started, u16) {
    for _ in 0..5 {
        let port = free_port();
        dir.write(
            "askgate.toml",
            &format!(
                "# from the file\nlisten = [\"127.0.0.1:{port}\"]\n\n[store]\nurl = \"memory\"\n\
                 data_dir = \"file-data\"\n"
            ),
        );
        match serve(&dir.0, args, env) {
            Ok(started) => return (started, port),
            Err((_, said)) if said.contains("in use") => continue,
            Err((code, said)) => panic!("the gateway did not start ({code:?}): {said}"),
        }
    }
    panic!("no free port in five tries");
}

#[tokio::test]
async fn serve_listens_where_its_config_file_says() {
    let dir = Scratch::new("config-listen");
    let (started, port) = started_from_file(&dir, &["--config", "askgate.toml"], &[]);
    assert_eq!(started.addr, SocketAddr::from(([127, 0, 0, 1], port)));
    let (status, body) = http_text(started.addr, "GET", "/healthz", None, None).await;
    assert_eq!((status, body.trim()), (200, "ok"));
    assert!(
        dir.0.join("file-data").join("secret").exists(),
        "the file's data directory holds the secret"
    );
}

#[tokio::test]
async fn a_flag_and_a_variable_each_override_the_file() {
    let dir = Scratch::new("config-override");
    let (by_flag, port) = started_from_file(
        &dir,
        &["--config", "askgate.toml", "--listen", "127.0.0.1:0"],
        &[],
    );
    assert_ne!(
        by_flag.addr.port(),
        port,
        "the flag's address, not the file's"
    );
    let (status, _) = http_text(by_flag.addr, "GET", "/healthz", None, None).await;
    assert_eq!(status, 200);
    drop(by_flag);
    let (by_variable, port) = started_from_file(
        &dir,
        &[],
        &[
            ("ASKGATE_CONFIG", "askgate.toml"),
            ("ASKGATE_LISTEN", "127.0.0.1:0"),
        ],
    );
    assert_ne!(
        by_variable.addr.port(),
        port,
        "the variable's address, not the file's"
    );
    let (status, _) = http_text(by_variable.addr, "GET", "/healthz", None, None).await;
    assert_eq!(status, 200);
}

#[test]
fn serve_refuses_a_bad_file_with_its_line_and_status_2() {
    let dir = Scratch::new("config-refused");
    dir.write(
        "askgate.toml",
        "listen = [\"127.0.0.1:0\"]\n[store]\nurl = \"memory\"\n\nmax_sessions = 5\n",
    );
    let (code, said) = serve(&dir.0, &["--config", "askgate.toml"], &[])
        .err()
        .expect("refused");
    assert_eq!(code, Some(2), "{said}");
    assert!(
        said.contains(
            "askgate.toml:5: store.max_sessions: unknown setting (did you mean max_sessions?)"
        ),
        "{said}"
    );
    // A value its flag's parser takes, refused by serve's own checks: still its line, still 2.
    dir.write(
        "askgate.toml",
        "listen = [\"127.0.0.1:0\"]\nmax_frame_bytes = 10\n[store]\nurl = \"memory\"\n",
    );
    let (code, said) = serve(&dir.0, &["--config", "askgate.toml"], &[])
        .err()
        .expect("refused");
    assert_eq!(code, Some(2), "{said}");
    assert!(
        said.contains("askgate.toml:2: max_frame_bytes: --max-frame-bytes must be at least 1024"),
        "{said}"
    );
}

#[test]
fn config_check_says_ok_or_each_fault_with_its_line() {
    let dir = Scratch::new("config-check");
    dir.write(
        "good.toml",
        "listen = [\"127.0.0.1:8080\", \"[::1]:8080\"]\nmax_connections_per_address = 0\n\
         strict_durability = true\n[store]\nurl = \"memory\"\n\
         [groups]\nreviewers = [\"alice@example.com\"]\n",
    );
    let ran = askgate_in(&dir.0, &["config", "check", "good.toml"]);
    assert_eq!(ran.status.code(), Some(0), "{}", text(&ran.stderr));
    assert_eq!(text(&ran.stdout), "good.toml: ok\n");
    dir.write(
        "bad.toml",
        "listen = [\"127.0.0.1:8080\"]\n\nmax_conections_per_address = 256\n\
         presence_ttl_s = 2\n\n[store]\nurl = 5\n",
    );
    let ran = askgate_in(&dir.0, &["config", "check", "bad.toml"]);
    assert_eq!(ran.status.code(), Some(2));
    let said = text(&ran.stderr);
    let lines: Vec<&str> = said.lines().collect();
    assert_eq!(lines.len(), 3, "{said}");
    assert_eq!(
        lines[0],
        "bad.toml:3: max_conections_per_address: unknown setting (did you mean \
         max_connections_per_address?)"
    );
    assert!(
        lines[1].starts_with("bad.toml:4: presence_ttl_s: invalid value '2'"),
        "{said}"
    );
    assert_eq!(lines[2], "bad.toml:7: store.url: expected a string");
    assert!(
        !dir.0.join("askgate-data").exists(),
        "the check made nothing"
    );
}

#[test]
fn config_example_names_every_serve_flag_and_passes_the_check() {
    let dir = Scratch::new("config-example");
    let example = askgate_in(&dir.0, &["config", "example"]);
    assert!(example.status.success());
    let example = text(&example.stdout);
    // Every flag `serve --help` lists, whoever added it (--config and --help apart).
    let help = text(&askgate_in(&dir.0, &["serve", "--help"]).stdout);
    let flags: Vec<&str> = help
        .split_whitespace()
        .filter_map(|word| word.strip_prefix("--"))
        .map(|flag| flag.trim_end_matches(|c: char| !(c.is_ascii_alphanumeric() || c == '-')))
        .filter(|flag| flag.len() > 1 && help.contains(&format!("  --{flag}")))
        .collect();
    assert!(flags.len() > 40, "{flags:?}");
    for flag in flags {
        if matches!(flag, "config" | "help") {
            continue;
        }
        assert!(
            example.contains(&format!("# Flag --{flag}")),
            "--{flag} is not in the example"
        );
    }
    dir.write("example.toml", &example);
    let ran = askgate_in(&dir.0, &["config", "check", "example.toml"]);
    assert_eq!(ran.status.code(), Some(0), "{}", text(&ran.stderr));
    assert_eq!(text(&ran.stdout), "example.toml: ok\n");
}
