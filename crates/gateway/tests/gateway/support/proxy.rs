//! A TCP proxy in front of Redis that a test can cut (every connection through it dropped, new
//! ones refused) and restore: one node's link to Redis failing while the others' work. It can
//! also go deaf on the subscriptions open so far: their connections stay up, and nothing Redis
//! sends on them arrives (a subscription attached to a server that stopped forwarding).

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::{TcpListener, TcpStream};
use tokio_util::sync::CancellationToken;

/// A proxy to one upstream address.
pub struct Proxy {
    /// Where it listens.
    pub addr: SocketAddr,
    cut: Arc<AtomicBool>,
    /// Connections numbered below this that have subscribed get nothing more from Redis.
    deaf_below: Arc<AtomicU64>,
    /// How many connections were made.
    made: Arc<AtomicU64>,
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
        let deaf_below = Arc::new(AtomicU64::new(0));
        let made = Arc::new(AtomicU64::new(0));
        let (deafness, counter) = (Arc::clone(&deaf_below), Arc::clone(&made));
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
                let number = counter.fetch_add(1, Ordering::SeqCst);
                let deafness = Arc::clone(&deafness);
                tokio::spawn(async move {
                    let Ok(server) = TcpStream::connect(upstream).await else {
                        return;
                    };
                    tokio::select! {
                        () = forward(client, server, delay, (number, deafness)) => {}
                        () = token.cancelled() => {}
                    }
                });
            }
        });
        Proxy {
            addr,
            cut,
            deaf_below,
            made,
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

    /// From now on, nothing Redis sends on the subscriptions open so far reaches the node;
    /// their connections stay open. Later connections are not affected.
    pub fn deafen_subscriptions(&self) {
        self.deaf_below
            .store(self.made.load(Ordering::SeqCst), Ordering::SeqCst);
    }

    /// Lets connections through again.
    pub fn restore(&self) {
        self.cut.store(false, Ordering::SeqCst);
    }
}

/// Copies both ways until either side closes; what the server sends waits `delay` first,
/// unless the client has subscribed (its notices then come at once), and is dropped if the
/// connection (`number`) has subscribed and is below the proxy's deafness mark.
async fn forward(
    client: TcpStream,
    server: TcpStream,
    delay: Duration,
    (number, deaf_below): (u64, Arc<AtomicU64>),
) {
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
            let subscriber = subscribed.load(Ordering::SeqCst);
            if subscriber && number < deaf_below.load(Ordering::SeqCst) {
                continue;
            }
            if !delay.is_zero() && !subscriber {
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
