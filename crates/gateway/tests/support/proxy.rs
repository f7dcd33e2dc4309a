//! A TCP proxy in front of Redis that a test can cut (every connection through it dropped, new
//! ones refused) and restore: one node's link to Redis failing while the others' work.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

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
                    let (mut client, mut server) = (client, server);
                    tokio::select! {
                        _ = tokio::io::copy_bidirectional(&mut client, &mut server) => {}
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
