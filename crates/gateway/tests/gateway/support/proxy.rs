//! A TCP proxy in front of Redis that a test can cut (every connection through it dropped, new
//! ones refused) and restore: one node's link to Redis failing while the others' work. It can
//! also go deaf on the subscriptions open so far: their connections stay up, and nothing Redis
//! sends on them arrives (a subscription attached to a server that stopped forwarding). A test
//! can wait until a node has sent Redis a command naming something ([`Proxy::watch_upstream`]),
//! and hold Redis's replies back until it lets them go ([`Proxy::hold_replies`]).

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{oneshot, watch};
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
    watches: Watches,
    /// While true, replies on connections that have not subscribed wait.
    held: Arc<watch::Sender<bool>>,
}

/// What tests wait to see a node send Redis: the bytes, and who to tell.
type Watches = Arc<std::sync::Mutex<Vec<(Vec<u8>, oneshot::Sender<()>)>>>;

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
        let watches = Watches::default();
        let watched = Arc::clone(&watches);
        let held = Arc::new(watch::Sender::new(false));
        let holding = Arc::clone(&held);
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
                let watched = Arc::clone(&watched);
                let hold = holding.subscribe();
                tokio::spawn(async move {
                    let Ok(server) = TcpStream::connect(upstream).await else {
                        return;
                    };
                    tokio::select! {
                        () = forward(client, server, (delay, hold), (number, deafness), watched) => {}
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
            watches,
            held,
        }
    }

    /// From now on Redis's replies to commands wait (notices on subscriptions do not), until
    /// [`Proxy::release_replies`].
    pub fn hold_replies(&self) {
        self.held.send_replace(true);
    }

    /// Lets the replies held back go, and the later ones through.
    pub fn release_replies(&self) {
        self.held.send_replace(false);
    }

    /// Resolves once a node sends Redis a command containing `text` from now on (set the watch
    /// before what makes it send one).
    pub fn watch_upstream(&self, text: &str) -> oneshot::Receiver<()> {
        let (tell, told) = oneshot::channel();
        self.watches
            .lock()
            .unwrap()
            .push((text.as_bytes().to_vec(), tell));
        told
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

/// Copies both ways until either side closes; what the server sends waits `delay` first, and
/// while `hold` says so, unless the client has subscribed (its notices then come at once), and
/// is dropped if the
/// connection (`number`) has subscribed and is below the proxy's deafness mark. What the
/// client sends is checked against the `watches`.
async fn forward(
    client: TcpStream,
    server: TcpStream,
    (delay, mut hold): (Duration, watch::Receiver<bool>),
    (number, deaf_below): (u64, Arc<AtomicU64>),
    watches: Watches,
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
            tell_watchers(&watches, &buffer[..n]);
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
            if !subscriber && hold.wait_for(|held| !*held).await.is_err() {
                return;
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

/// Tells every watch whose text `sent` contains, and forgets it.
fn tell_watchers(watches: &Watches, sent: &[u8]) {
    let mut watches = watches.lock().unwrap();
    let mut i = 0;
    while i < watches.len() {
        let text = &watches[i].0;
        if sent
            .windows(text.len())
            .any(|window| window == text.as_slice())
        {
            let (_, tell) = watches.swap_remove(i);
            let _ = tell.send(());
        } else {
            i += 1;
        }
    }
}
