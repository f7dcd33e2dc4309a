//! The server: the router, `run(listener, config, shutdown)`, and graceful shutdown.
//!
//! The listeners come in already bound (tests bind port 0), and so does the shutdown signal.
//! On shutdown the gateway stops accepting, every socket task closes its socket with 1001,
//! and `run` returns once they are done or the grace period has passed. (axum's own graceful
//! shutdown does not wait for upgraded WebSockets: the tracker below does.)

use std::borrow::Cow;
use std::future::Future;
use std::sync::{Arc, Weak};
use std::time::Duration;

use anyhow::Context as _;
use axum::Router;
use axum::extract::{DefaultBodyLimit, FromRef};
use axum::routing::{get, post};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::config::{Config, StoreKind};
use crate::connections::{
    ConnectionCaps, HttpTimeouts, KeyCheck, ServeSettings, accept_loop, fd_limit,
};
use crate::hub::{Hub, Restored};
use crate::keys::{AgentKeys, ViewerKeys};
use crate::metrics::Metrics;
use crate::notify::{Notifier, NotifyConfig, NotifySettings, RequestLookup};
use crate::people::{People, TrustedProxies};
use crate::store::redis::{RedisOptions, RedisStore, check_durability};
use crate::store::{DurableStore, LogSettings, MemoryStore, Store};
use crate::transport;
use crate::web::{self, WebAssets};

/// How often outcomes past their retention are swept.
pub const SWEEP_INTERVAL: Duration = Duration::from_secs(60);
/// How often audit trails past their retention are looked for.
pub const TRAIL_SWEEP_INTERVAL: Duration = Duration::from_secs(3600);

/// What every handler shares.
#[derive(Clone)]
pub struct AppState {
    /// The hub.
    pub hub: Arc<Hub>,
    /// Who may connect as an agent (shared: axum clones the state for every request, and a
    /// tab's task holds its copy for as long as the tab is open).
    pub agent_keys: Arc<AgentKeys>,
    /// Cancelled when the server shuts down; every socket task watches it.
    pub shutdown: CancellationToken,
    /// Every socket task, so shutdown can wait for them.
    pub tracker: TaskTracker,
    /// The pages.
    pub web: WebAssets,
    /// The identity-aware proxy, if one is trusted.
    pub proxies: Arc<TrustedProxies>,
}

/// The pages' handlers take only the pages.
impl FromRef<AppState> for WebAssets {
    fn from_ref(state: &AppState) -> WebAssets {
        state.web.clone()
    }
}

/// The router, for a given state.
pub fn router(state: AppState) -> Router {
    // Only agents send bodies (the HTTP API): their limit.
    let body_limit = state.hub.limits().max_agent_frame_bytes;
    Router::new()
        .route("/", get(web::landing))
        .route("/s/{session}", get(web::session_page))
        .route("/js/{file}", get(web::js))
        .route("/sw.js", get(web::service_worker))
        .route("/style.css", get(web::style))
        .route("/healthz", get(transport::healthz))
        .route("/readyz", get(transport::readyz))
        .route("/metrics", get(transport::metrics))
        .route("/v1/openapi.json", get(transport::openapi))
        .route("/v1/agent", get(transport::agent_endpoint))
        .route("/v1/sessions/{session}/live", get(transport::tab_endpoint))
        .route(
            "/v1/sessions/{session}/requests",
            post(transport::post_request),
        )
        .route(
            "/v1/sessions/{session}/requests/{id}",
            get(transport::get_request).delete(transport::delete_request),
        )
        .route(
            "/v1/sessions/{session}/requests/{id}/ack",
            post(transport::ack_request),
        )
        .route("/v1/sessions/{session}/links", post(transport::post_link))
        .route(
            "/v1/sessions/{session}/followers",
            post(transport::post_follower).delete(transport::delete_follower),
        )
        .route("/v1/inbox/links", post(transport::post_inbox_link))
        .route("/v1/inbox/live", get(transport::inbox_endpoint))
        .route("/inbox", get(web::inbox_page))
        .route("/ops", get(web::ops_page))
        .route("/v1/audit", get(transport::get_audit))
        .route("/v1/requests", get(transport::list_requests))
        .route("/v1/ops/summary", get(transport::ops_summary))
        .route("/v1/ops/history", get(transport::ops_history))
        .route(
            "/v1/sessions/{session}/rules",
            get(transport::get_session_rules),
        )
        .route(
            "/v1/sessions/{session}/rules/{id}",
            axum::routing::delete(transport::delete_session_rule),
        )
        .route("/v1/rules", get(transport::get_key_rules))
        .route(
            "/v1/rules/{id}",
            axum::routing::delete(transport::delete_key_rule),
        )
        .route(
            "/a/{key}",
            get(transport::open_link).post(transport::answer_link),
        )
        .route("/v1/push/key", get(transport::get_push_key))
        .route(
            "/v1/push/subscriptions",
            get(transport::get_subscriptions)
                .post(transport::post_subscription)
                .delete(transport::delete_subscription),
        )
        .route(
            "/v1/slack/interactions",
            post(transport::slack_interactions).layer(DefaultBodyLimit::max(
                crate::notify::slack::interactions::MAX_INTERACTION_BYTES,
            )),
        )
        .layer(DefaultBodyLimit::max(body_limit))
        // Every request, whichever route reads the identity (today the tab socket).
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            transport::single_identity_header,
        ))
        .with_state(state)
}

/// The hub and state for `config`, serving at `public_url`.
///
/// # Errors
/// The store cannot be opened.
pub async fn build(config: &Config, public_url: &str) -> anyhow::Result<AppState> {
    let metrics = Arc::new(Metrics::default());
    let (store, config): (Arc<dyn Store>, Cow<'_, Config>) = match &config.store {
        StoreKind::Memory => (Arc::new(MemoryStore::new()), Cow::Borrowed(config)),
        StoreKind::Embedded => (
            Arc::new(DurableStore::open_keyed(
                &config.data_dir,
                Arc::clone(&metrics.store_writes),
                LogSettings {
                    recover_damaged_log: config.recover_damaged_log,
                    ..LogSettings::default()
                },
                config.audit_key.clone(),
            )?),
            Cow::Borrowed(config),
        ),
        StoreKind::Redis(url) => {
            let (store, config) = open_redis(config, url, Arc::clone(&metrics)).await?;
            (store, Cow::Owned(config))
        }
    };
    build_with_parts(&config, public_url, store, metrics).await
}

/// Opens the Redis store: checks its durability settings, and takes the shared secret from it
/// when no secret file was given.
async fn open_redis(
    config: &Config,
    url: &str,
    metrics: Arc<Metrics>,
) -> anyhow::Result<(Arc<dyn Store>, Config)> {
    let options = RedisOptions {
        url: url.to_owned(),
        prefix: config.redis.prefix.clone(),
        retention: config.limits.retention,
        audit_retention: config.limits.audit_retention,
        presence_ttl: config.redis.presence_ttl,
        probe_silence: config.redis.probe_silence,
    };
    let store = RedisStore::connect(&options, metrics).await?;
    let durability = store.durability().await?;
    check_durability(&durability, config.redis.strict_durability).map_err(anyhow::Error::msg)?;
    if let Some(key) = &config.audit_key {
        store.use_audit_key(key).await?;
    }
    let mut config = config.clone();
    if config.redis.secret_from_store {
        config.secret = store.shared_secret().await?;
    }
    Ok((store, config))
}

/// The hub and state over a given store (restored from it); for tests (with the `testing`
/// feature only).
///
/// # Errors
/// The store cannot be read.
#[cfg(any(test, feature = "testing"))]
pub async fn build_with_store(
    config: &Config,
    public_url: &str,
    store: Arc<dyn Store>,
) -> anyhow::Result<AppState> {
    build_with_parts(config, public_url, store, Arc::new(Metrics::default())).await
}

/// The hub and state over `store`, counting into `metrics` (which the store may share).
async fn build_with_parts(
    config: &Config,
    public_url: &str,
    store: Arc<dyn Store>,
    metrics: Arc<Metrics>,
) -> anyhow::Result<AppState> {
    let records = store.load().await?;
    let followers = store.followers().await?;
    // Always a notifier: without a notify file it sends only asks' callbacks.
    let notify = config.notify.clone().unwrap_or_else(|| NotifyConfig {
        settings: NotifySettings::default(),
        retry_for: config.callback_retry_for,
        allow_private: config.callback_hosts.allow_private,
        vapid_key: None,
    });
    let notifier = Notifier::new(
        notify,
        config.people.groups.clone(),
        ViewerKeys::new(&config.secret, public_url),
        Arc::clone(&store),
        Arc::clone(&metrics),
        config.callback_hosts.clone(),
    )
    .map_err(anyhow::Error::msg)?;
    notifier.restore().await?;
    let notifier = Some(notifier);
    let hub = Hub::new(
        store,
        config.limits.clone(),
        ViewerKeys::new(&config.secret, public_url),
        People {
            require_identity: config.people.require_identity,
            groups: config.people.groups.clone(),
        },
        metrics,
        notifier.clone(),
    );
    hub.set_agent_key_ids(
        AgentKeys::new(&config.agent_keys, public_url)
            .with_id_secret(&config.secret)
            .key_ids(),
    );
    hub.set_operators(config.people.operators.clone());
    let restored = hub.restore(records).await;
    hub.restore_followers(followers);
    // The notifier's tasks stop with the server (and are waited for, as its connections are),
    // so that a server stopped lets go of the store.
    let shutdown = CancellationToken::new();
    let tracker = TaskTracker::new();
    if let Some(notifier) = &notifier {
        let lookup: Weak<dyn RequestLookup> = Arc::downgrade(&hub) as Weak<Hub>;
        notifier.run(lookup, &shutdown, &tracker);
    }
    hub.start_shared();
    if restored != Restored::default() {
        tracing::info!(
            open = restored.open,
            timed_out = restored.timed_out,
            resolved = restored.resolved,
            unreadable = restored.unreadable,
            "restored requests from the store"
        );
    }
    Ok(AppState {
        hub,
        agent_keys: Arc::new(
            AgentKeys::new(&config.agent_keys, public_url)
                .with_operators(&config.operator_keys)
                .with_id_secret(&config.secret),
        ),
        shutdown,
        tracker,
        web: WebAssets {
            dir: config.web_dir.clone(),
        },
        proxies: Arc::new(TrustedProxies::new(
            config.people.user_header.clone(),
            config.people.trusted_proxies.clone(),
        )),
    })
}

/// The state to serve on `listener`: checks that `config` is safe for its address, then opens
/// the store and restores from it. Viewer links use the public URL, or the bound address.
///
/// # Errors
/// The configuration is unsafe for the address, or the store cannot be opened.
pub async fn prepare(listener: &TcpListener, config: &Config) -> anyhow::Result<AppState> {
    let addr = listener
        .local_addr()
        .context("reading the listener's address")?;
    config.check_bind(&addr).map_err(anyhow::Error::msg)?;
    let public_url = config
        .public_url
        .clone()
        .unwrap_or_else(|| format!("http://{addr}"));
    build(config, &public_url).await
}

/// Serves a prepared state (the demo and tests hold on to it).
///
/// # Errors
/// The listener fails.
pub async fn serve(
    listener: TcpListener,
    state: AppState,
    config: &Config,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> anyhow::Result<()> {
    serve_all(vec![listener], state, config, shutdown).await
}

/// Serves a prepared state on every one of `listeners` (`--listen` given several addresses,
/// or a host name that resolves to several), under one set of connection caps.
///
/// # Errors
/// A listener fails.
pub async fn serve_all(
    listeners: Vec<TcpListener>,
    state: AppState,
    config: &Config,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> anyhow::Result<()> {
    let token = state.shutdown.clone();
    let tracker = state.tracker.clone();
    let sweeper = tokio::spawn(sweep(Arc::clone(&state.hub), token.clone()));
    let counting = Arc::clone(&state.hub);
    tokio::spawn(crate::memory::give_back_after_requests_end(
        move || counting.open_bytes(),
        state.hub.shared_metrics(),
        token.clone(),
    ));
    let stop = token.clone();
    tokio::spawn(async move {
        shutdown.await;
        stop.cancel();
    });
    // Every socket the hub holds is closed with 1001 when the token is cancelled, by whoever
    // cancels it; sockets still saying hello watch the token themselves.
    let hub = Arc::clone(&state.hub);
    let stopped = token.clone();
    let closer = tokio::spawn(async move {
        stopped.cancelled().await;
        hub.kick_tabs(askgate_protocol::close::GOING_AWAY);
        hub.kick_agents(askgate_protocol::close::GOING_AWAY);
    });
    let limits = &config.limits;
    let caps = ConnectionCaps::new(
        fd_limit::connection_cap(limits.max_connections, fd_limit::open_file_limit()),
        limits.max_connections_per_address,
        state.hub.shared_metrics(),
    );
    let settings = ServeSettings {
        timeouts: HttpTimeouts {
            header_read: limits.header_read_timeout,
            idle: limits.idle_timeout,
        },
        handshake_timeout: limits.handshake_timeout,
        shows_key: {
            let state = state.clone();
            KeyCheck(Arc::new(move |headers| {
                state.agent_keys.admit(headers).is_ok()
            }))
        },
        request_timeout: limits.request_timeout,
        metrics: state.hub.shared_metrics(),
    };
    tracing::debug!(
        max_connections = caps.max_total(),
        max_per_address = caps.max_per_address(),
        "accepting connections"
    );
    let router = router(state);
    let mut accepting = tokio::task::JoinSet::new();
    for listener in listeners {
        accepting.spawn(accept_loop(
            listener,
            router.clone(),
            Arc::clone(&caps),
            settings.clone(),
            token.clone(),
            tracker.clone(),
        ));
    }
    // Each loop ends on the token; one that panicked is reported, and stops the others.
    while let Some(ended) = accepting.join_next().await {
        if let Err(error) = ended {
            token.cancel();
            tracing::error!(%error, "accepting connections failed");
        }
    }
    // Connections and sockets saw the token too; wait for them to finish, within the grace
    // period.
    tracker.close();
    if tokio::time::timeout(config.limits.shutdown_grace, tracker.wait())
        .await
        .is_err()
    {
        tracing::warn!("some connections did not close within the grace period");
    }
    // The sweeper and the closer stop on the token; waiting for them releases their hold on
    // the hub and the store.
    let _ = sweeper.await;
    let _ = closer.await;
    Ok(())
}

async fn sweep(hub: Arc<Hub>, shutdown: CancellationToken) {
    let mut interval = tokio::time::interval(SWEEP_INTERVAL);
    // Trails are kept for days: looking for stale ones hourly is often enough, and a local
    // store reads every session's head to find them.
    let mut trails = tokio::time::interval(TRAIL_SWEEP_INTERVAL);
    loop {
        tokio::select! {
            () = shutdown.cancelled() => return,
            _ = interval.tick() => {
                let swept = hub.sweep().await;
                if swept > 0 {
                    tracing::info!(swept, "expired outcomes forgotten");
                }
            }
            _ = trails.tick() => hub.drop_stale_trails().await,
        }
    }
}

#[cfg(test)]
mod route_tests {
    //! The router against `docs/openapi.json`. axum cannot list a router's routes, so the
    //! test reads [`router`]'s own source: every `.route("PATH", get(..).post(..))` in it.

    use std::collections::{BTreeMap, BTreeSet};

    use crate::transport::OPENAPI_JSON;

    /// The methods a route's method router may name, as OpenAPI spells them.
    const METHODS: [&str; 7] = ["get", "post", "put", "patch", "delete", "head", "options"];

    type Routes = BTreeMap<String, BTreeSet<String>>;

    /// The body of `fn router`, from its signature to the end of its chain.
    fn router_source() -> &'static str {
        let source = include_str!("server.rs");
        let start = source
            .find("pub fn router(")
            .expect("server.rs has `pub fn router(`");
        let len = source[start..]
            .find("\n}\n")
            .expect("`fn router` ends with a `}` line");
        &source[start..start + len]
    }

    /// Every `.route(PATH, METHOD_ROUTER)` in `source`: the path, and the methods named at
    /// the top of its method router (`get(a).delete(b)`, `axum::routing::delete(c)`; the
    /// handlers and layers inside them are not methods).
    fn routes_in(source: &str) -> Routes {
        let mut routes = Routes::new();
        let mut rest = source;
        while let Some(at) = rest.find(".route(") {
            rest = &rest[at + ".route(".len()..];
            let open = rest.find('"').expect("a route's path is a string literal");
            let close = rest[open + 1..]
                .find('"')
                .expect("the path's closing quote")
                + open
                + 1;
            let path = rest[open + 1..close].to_owned();
            let methods = routes.entry(path).or_default();
            // Walk the rest of the call at paren depth 1 (the route call's own arguments).
            let (mut depth, mut word) = (1_usize, String::new());
            for c in rest[close + 1..].chars() {
                if c.is_ascii_alphanumeric() || c == '_' {
                    word.push(c);
                    continue;
                }
                if c == '(' {
                    if depth == 1 && METHODS.contains(&word.as_str()) {
                        methods.insert(word.clone());
                    }
                    depth += 1;
                } else if c == ')' {
                    depth -= 1;
                    if depth == 0 {
                        break;
                    }
                }
                word.clear();
            }
        }
        routes
    }

    /// The document's paths and, for each, the methods it has operations for.
    fn documented() -> Routes {
        let document: serde_json::Value =
            serde_json::from_str(OPENAPI_JSON).expect("docs/openapi.json is JSON");
        let paths = document["paths"]
            .as_object()
            .expect("docs/openapi.json has `paths`");
        paths
            .iter()
            .map(|(path, item)| {
                let methods = item
                    .as_object()
                    .into_iter()
                    .flat_map(|item| item.keys())
                    .filter(|key| METHODS.contains(&key.as_str()))
                    .cloned()
                    .collect();
                (path.clone(), methods)
            })
            .collect()
    }

    /// Every route the router serves is in the document with the same methods, and every
    /// path the document has is one the router serves.
    #[test]
    fn every_route_is_documented_and_every_documented_path_is_routed() {
        let routed = routes_in(router_source());
        assert!(
            routed.len() > 20 && routed.contains_key("/v1/openapi.json"),
            "the scan of `fn router` found too little: {routed:?}"
        );
        let documented = documented();
        let mut wrong = Vec::new();
        for (path, methods) in &routed {
            match documented.get(path) {
                None => wrong.push(format!(
                    "{path} {methods:?}: routed, not in docs/openapi.json"
                )),
                Some(listed) if listed != methods => wrong.push(format!(
                    "{path}: routed for {methods:?}, docs/openapi.json has {listed:?}"
                )),
                Some(_) => {}
            }
        }
        for path in documented.keys().filter(|path| !routed.contains_key(*path)) {
            wrong.push(format!("{path}: in docs/openapi.json, not routed"));
        }
        assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    }

    /// The scan reads a chain as the router writes it: methods chained, a method router
    /// named by its full path, layers and handlers that are not methods.
    #[test]
    fn the_scan_reads_every_way_a_route_is_written() {
        let source = r#"
            .route("/a", get(web::a))
            .route(
                "/b/{id}",
                get(transport::get_b).delete(transport::delete_b),
            )
            .route("/c", axum::routing::delete(transport::post_c))
            .route("/d", post(h).layer(DefaultBodyLimit::max(get_limit(3))))
        "#;
        let routes = routes_in(source);
        let methods =
            |path: &str| -> Vec<&str> { routes[path].iter().map(String::as_str).collect() };
        assert_eq!(routes.len(), 4, "{routes:?}");
        assert_eq!(methods("/a"), ["get"]);
        assert_eq!(methods("/b/{id}"), ["delete", "get"]);
        assert_eq!(methods("/c"), ["delete"]);
        assert_eq!(methods("/d"), ["post"]);
    }
}
