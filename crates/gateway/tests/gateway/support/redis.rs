//! A `redis-server` of the test's own: a free port, a temporary directory, an append-only file
//! synced on every write (what askgate's docs ask for), killed when dropped.

use std::io::{Read as _, Write as _};
use std::net::TcpStream;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use super::{TIMEOUT, free_port, tempdir};

/// One Redis server process.
pub struct RedisServer {
    child: Option<Child>,
    /// Where it listens.
    pub port: u16,
    dir: PathBuf,
    extra: Vec<String>,
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        self.kill();
        super::remove_scratch(&self.dir);
    }
}

impl RedisServer {
    /// A server with the settings askgate asks for, plus `extra` (`--maxmemory-policy ...`).
    pub fn start(extra: &[&str]) -> RedisServer {
        let dir = tempdir("redis");
        let mut server = RedisServer {
            child: None,
            port: 0,
            dir,
            extra: extra.iter().map(|s| (*s).to_owned()).collect(),
        };
        for _ in 0..10 {
            server.port = free_port();
            if server.spawn() {
                return server;
            }
        }
        panic!("redis-server would not start; see {}", server.dir.display());
    }

    /// Starts the process on the server's port and directory; `false` if it did not come up.
    fn spawn(&mut self) -> bool {
        let binary = which("redis-server").unwrap_or_else(|| {
            panic!(
                "redis-server is not installed: scripts/setup-test-env.sh installs Debian's package"
            )
        });
        let child = Command::new(binary)
            .args(["--port", &self.port.to_string(), "--bind", "127.0.0.1"])
            .arg("--dir")
            .arg(&self.dir)
            .args([
                "--appendonly",
                "yes",
                "--appendfsync",
                "always",
                "--save",
                "",
            ])
            .args(["--maxmemory-policy", "noeviction", "--daemonize", "no"])
            .arg("--logfile")
            .arg(self.dir.join("redis.log"))
            .args(&self.extra)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("redis-server starts");
        self.child = Some(child);
        let deadline = Instant::now() + TIMEOUT;
        while Instant::now() < deadline {
            if let Some(child) = &mut self.child
                && let Ok(Some(_)) = child.try_wait()
            {
                self.child = None;
                return false;
            }
            if self.ping() {
                return true;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        false
    }

    /// Whether it answers `PING` (and has loaded its data: a loading server says `-LOADING`).
    pub fn ping(&self) -> bool {
        let Ok(mut stream) = TcpStream::connect(("127.0.0.1", self.port)) else {
            return false;
        };
        let _ = stream.set_read_timeout(Some(Duration::from_secs(1)));
        if stream.write_all(b"PING\r\n").is_err() {
            return false;
        }
        let mut reply = [0u8; 7];
        stream.read_exact(&mut reply).is_ok() && &reply == b"+PONG\r\n"
    }

    /// `redis://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.port)
    }

    /// SIGKILL, and waits for it to be gone.
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Starts it again on the same port and directory (its append-only file is read back).
    pub fn restart(&mut self) {
        self.kill();
        assert!(
            self.spawn(),
            "redis-server did not come back on port {}",
            self.port
        );
    }

    /// `redis-cli -p PORT ARGS...`, its output.
    pub fn cli(&self, args: &[&str]) -> String {
        let output = Command::new("redis-cli")
            .args(["-p", &self.port.to_string()])
            .args(args)
            .output()
            .expect("redis-cli runs");
        String::from_utf8_lossy(&output.stdout).into_owned()
    }
}

fn which(binary: &str) -> Option<PathBuf> {
    std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|dir| dir.join(binary))
            .find(|path| path.is_file())
    })
}

/// A certificate authority and a certificate for 127.0.0.1 signed by it, made with `openssl`
/// in a temporary directory: (the CA's file, the certificate's, its key's).
pub fn test_certificates() -> (PathBuf, PathBuf, PathBuf) {
    let dir = tempdir("tls");
    let run = |args: &[&str]| {
        let output = Command::new("openssl")
            .args(args)
            .current_dir(&dir)
            .output()
            .expect("openssl runs");
        assert!(
            output.status.success(),
            "openssl {args:?}: {}",
            String::from_utf8_lossy(&output.stderr)
        );
    };
    run(&[
        "req",
        "-x509",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-keyout",
        "ca.key",
        "-out",
        "ca.pem",
        "-days",
        "2",
        "-subj",
        "/CN=askgate test CA",
    ]);
    run(&[
        "req",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-keyout",
        "server.key",
        "-out",
        "server.csr",
        "-subj",
        "/CN=127.0.0.1",
    ]);
    std::fs::write(dir.join("san.ext"), "subjectAltName=IP:127.0.0.1\n").expect("write");
    run(&[
        "x509",
        "-req",
        "-in",
        "server.csr",
        "-CA",
        "ca.pem",
        "-CAkey",
        "ca.key",
        "-CAcreateserial",
        "-out",
        "server.pem",
        "-days",
        "2",
        "-extfile",
        "san.ext",
    ]);
    (
        dir.join("ca.pem"),
        dir.join("server.pem"),
        dir.join("server.key"),
    )
}

/// A Redis Cluster of three primaries (no replicas), each a [`RedisServer`], joined with
/// `redis-cli --cluster create`.
pub struct RedisCluster {
    /// The primaries.
    pub servers: Vec<RedisServer>,
}

impl RedisCluster {
    /// Three primaries, their slots assigned, once every one says `cluster_state:ok`.
    pub fn start() -> RedisCluster {
        let servers: Vec<RedisServer> = (0..3)
            .map(|_| {
                // The bus port is set, not left at port + 10000, which may not exist.
                let bus = free_port().to_string();
                RedisServer::start(&[
                    "--cluster-enabled",
                    "yes",
                    "--cluster-port",
                    &bus,
                    "--cluster-node-timeout",
                    "5000",
                ])
            })
            .collect();
        let addresses: Vec<String> = servers
            .iter()
            .map(|s| format!("127.0.0.1:{}", s.port))
            .collect();
        let output = Command::new("redis-cli")
            .args(["--cluster", "create"])
            .args(&addresses)
            .args(["--cluster-replicas", "0", "--cluster-yes"])
            .output()
            .expect("redis-cli runs");
        assert!(
            output.status.success(),
            "redis-cli --cluster create: {}{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
        let deadline = Instant::now() + TIMEOUT;
        for server in &servers {
            while !server
                .cli(&["CLUSTER", "INFO"])
                .contains("cluster_state:ok")
            {
                assert!(Instant::now() < deadline, "the cluster never came up");
                std::thread::sleep(Duration::from_millis(50));
            }
        }
        RedisCluster { servers }
    }

    /// A seed URL (the first primary): nodes find the others from it.
    pub fn url(&self) -> String {
        self.servers[0].url()
    }
}
