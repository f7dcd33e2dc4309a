//! A TCP proxy in front of Redis that a test can cut (every connection through it dropped, new
//! ones refused) and restore: one node's link to Redis failing while the others' work.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use std::time::Duration;

use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::{TcpListener, TcpStream};
use tokio_util::sync::CancellationToken;

/// A proxy to one upstream address.
pub struct Proxy {
    /// Where it listens.
    pub addr: SocketAddr,
    cut: Arc<AtomicBool>,
    /// Cancelled on each cut, ending every connection made before it.
    generation: Arc<std::sync::Mutex<CancellationToken>>,
    stop: CancellationToken,
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.stop.cancel();
        self.generation.lock().unwrap().cancel();
    }
}

impl Proxy {
    /// A proxy on a free loopback port forwarding to `upstream`.
    pub async fn start(upstream: SocketAddr) -> Proxy {
        Self::start_delaying(upstream, Duration::ZERO).await
    }

    /// A proxy that holds back what Redis sends by `delay` on every connection that has not
    /// subscribed to anything: a node's commands answered slowly, its notices not.
    pub async fn start_delaying_replies(upstream: SocketAddr, delay: Duration) -> Proxy {
        Self::start_delaying(upstream, delay).await
    }

    async fn start_delaying(upstream: SocketAddr, delay: Duration) -> Proxy {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("addr");
        let cut = Arc::new(AtomicBool::new(false));
        let generation = Arc::new(std::sync::Mutex::new(CancellationToken::new()));
        let stop = CancellationToken::new();
        let (is_cut, current, stopping) = (Arc::clone(&cut), Arc::clone(&generation), stop.clone());
        tokio::spawn(async move {
            loop {
                let accepted = tokio::select! {
                    accepted = listener.accept() => accepted,
                    () = stopping.cancelled() => return,
                };
                let Ok((client, _)) = accepted else { continue };
                if is_cut.load(Ordering::SeqCst) {
                    drop(client);
                    continue;
                }
                let token = current.lock().unwrap().clone();
                tokio::spawn(async move {
                    let Ok(server) = TcpStream::connect(upstream).await else {
                        return;
                    };
                    tokio::select! {
                        () = forward(client, server, delay) => {}
                        () = token.cancelled() => {}
                    }
                });
            }
        });
        Proxy {
            addr,
            cut,
            generation,
            stop,
        }
    }

    /// `redis://` through the proxy.
    pub fn url(&self) -> String {
        format!("redis://{}", self.addr)
    }

    /// Drops every connection and refuses new ones.
    pub fn cut(&self) {
        self.cut.store(true, Ordering::SeqCst);
        let mut generation = self.generation.lock().unwrap();
        generation.cancel();
        *generation = CancellationToken::new();
    }

    /// Lets connections through again.
    pub fn restore(&self) {
        self.cut.store(false, Ordering::SeqCst);
    }
}

/// Copies both ways until either side closes; what the server sends waits `delay` first,
/// unless the client has subscribed (its notices then come at once).
async fn forward(client: TcpStream, server: TcpStream, delay: Duration) {
    let (mut client_read, mut client_write) = client.into_split();
    let (mut server_read, mut server_write) = server.into_split();
    let subscribed = AtomicBool::new(false);
    let up = async {
        let mut buffer = vec![0u8; 64 * 1024];
        loop {
            let n = match client_read.read(&mut buffer).await {
                Ok(0) | Err(_) => return,
                Ok(n) => n,
            };
            if buffer[..n]
                .windows(9)
                .any(|w| w.eq_ignore_ascii_case(b"SUBSCRIBE"))
            {
                subscribed.store(true, Ordering::SeqCst);
            }
            if server_write.write_all(&buffer[..n]).await.is_err() {
                return;
            }
        }
    };
    let down = async {
        let mut buffer = vec![0u8; 64 * 1024];
        loop {
            let n = match server_read.read(&mut buffer).await {
                Ok(0) | Err(_) => return,
                Ok(n) => n,
            };
            if !delay.is_zero() && !subscribed.load(Ordering::SeqCst) {
                tokio::time::sleep(delay).await;
            }
            if client_write.write_all(&buffer[..n]).await.is_err() {
                return;
            }
        }
    };
    tokio::select! {
        () = up => {}
        () = down => {}
    }
}
