//! The Lua SHA-256 that the Redis scripts use for the audit trail's hash chain, run inside a
//! real `redis-server` and compared with the `sha2` crate's on inputs around every padding
//! boundary, long ones, binary ones and UTF-8 text.
#![cfg(target_os = "linux")]

use crate::support;

use std::fmt::Write as _;
use std::time::Duration;

use sha2::{Digest, Sha256};
use support::redis::RedisServer;

/// The prefix chunk, and a script that hashes its one argument with it.
const SHA256_LUA: &str = include_str!("../../src/store/redis/scripts/sha256.lua");

/// How long one command may take.
const COMMAND_TIMEOUT: Duration = Duration::from_secs(10);

fn rust_sha256_hex(message: &[u8]) -> String {
    let mut hex = String::with_capacity(64);
    for byte in Sha256::digest(message) {
        write!(hex, "{byte:02x}").expect("writing to a String");
    }
    hex
}

async fn lua_sha256_hex(conn: &mut redis::aio::MultiplexedConnection, message: &[u8]) -> String {
    let script = format!("{SHA256_LUA}\nreturn sha256_hex(ARGV[1])");
    tokio::time::timeout(
        COMMAND_TIMEOUT,
        redis::cmd("EVAL")
            .arg(script)
            .arg(0)
            .arg(message)
            .query_async::<String>(conn),
    )
    .await
    .expect("EVAL answered in time")
    .expect("EVAL succeeded")
}

/// A connection to `redis`.
async fn connected(redis: &RedisServer) -> redis::aio::MultiplexedConnection {
    let client = redis::Client::open(redis.url()).expect("a redis URL");
    // The crate's own limit on a reply is 500 ms by default, which hashing the longest inputs
    // in Lua can pass on a busy machine; this test's own timeout is the limit instead.
    let config = redis::AsyncConnectionConfig::new()
        .set_connection_timeout(Some(COMMAND_TIMEOUT))
        .set_response_timeout(Some(COMMAND_TIMEOUT));
    tokio::time::timeout(
        COMMAND_TIMEOUT,
        client.get_multiplexed_async_connection_with_config(&config),
    )
    .await
    .expect("connected in time")
    .expect("connected")
}

fn inputs() -> Vec<(String, Vec<u8>)> {
    let mut inputs: Vec<(String, Vec<u8>)> = vec![
        ("empty".into(), Vec::new()),
        ("abc".into(), b"abc".to_vec()),
        (
            "two-block NIST vector".into(),
            b"abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq".to_vec(),
        ),
        ("bytes 0..=255".into(), (0..=255u8).collect()),
        ("bytes 255..=0".into(), (0..=255u8).rev().collect()),
        ("NUL bytes".into(), vec![0u8; 70]),
        ("0xff bytes".into(), vec![0xffu8; 130]),
        (
            "UTF-8".into(),
            "héllo wörld — ασκ 質問 🦀🔐 ünïcödé ✓"
                .repeat(3)
                .into_bytes(),
        ),
    ];
    for length in [
        1, 55, 56, 57, 63, 64, 65, 119, 120, 127, 128, 129, 300, 1000, 100_000,
    ] {
        let message = (0..length)
            .map(|i| (i * 31 + length * 7 % 251) as u8)
            .collect();
        inputs.push((format!("{length} bytes"), message));
    }
    // Every length through three blocks, so each padding case is met.
    for length in 0..=192usize {
        inputs.push((format!("{length} x 'a'"), vec![b'a'; length]));
    }
    inputs
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lua_sha256_matches_sha2_inside_redis() {
    let redis = RedisServer::start(&[]);
    let mut conn = connected(&redis).await;

    assert_eq!(
        lua_sha256_hex(&mut conn, b"abc").await,
        "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
    );
    assert_eq!(
        lua_sha256_hex(&mut conn, b"").await,
        "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
    );

    for (name, message) in inputs() {
        assert_eq!(
            lua_sha256_hex(&mut conn, &message).await,
            rust_sha256_hex(&message),
            "{name} ({} bytes)",
            message.len()
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_prefix_defines_no_globals_and_returns_nothing() {
    let redis = RedisServer::start(&[]);
    let mut conn = connected(&redis).await;

    // On its own the chunk runs (Redis refuses a script that sets a global) and returns
    // nothing, which Redis replies to with nil.
    let reply: redis::Value = tokio::time::timeout(
        COMMAND_TIMEOUT,
        redis::cmd("EVAL")
            .arg(SHA256_LUA)
            .arg(0)
            .query_async(&mut conn),
    )
    .await
    .expect("EVAL answered in time")
    .expect("the prefix runs on its own");
    assert_eq!(reply, redis::Value::Nil);

    // And what follows it sees sha256_hex as a local, not a global.
    let global: redis::Value = tokio::time::timeout(
        COMMAND_TIMEOUT,
        redis::cmd("EVAL")
            .arg(format!(
                "{SHA256_LUA}\nreturn {{type(sha256_hex), rawget(_G, 'sha256_hex') == nil and 1 or 0}}"
            ))
            .arg(0)
            .query_async(&mut conn),
    )
    .await
    .expect("EVAL answered in time")
    .expect("EVAL succeeded");
    assert_eq!(
        global,
        redis::Value::Array(vec![
            redis::Value::BulkString(b"function".to_vec()),
            redis::Value::Int(1)
        ])
    );
}

/// The audit chain's prefix, which keys a chain with HMAC-SHA256 on top of the SHA-256 above.
const CHAIN_LUA: &str = include_str!("../../src/store/redis/scripts/chain.lua");

/// The Lua HMAC-SHA256 a keyed chain's entries are sealed with, finished from the key's two
/// states (`AuditKey::hmac_states_hex`), equals the Rust one (`AuditKey::mac`, the `hmac`
/// crate's), for keys of every byte value and messages around the block boundaries; and an entry sealed by `chain.lua` under a key hashes as
/// `crate::audit::chain` seals it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lua_hmac_and_a_keyed_entry_match_the_rust_chain_inside_redis() {
    use askgate::audit::chain::{AuditKey, ChainKey, hex, link_hash_with, sha256_hex};
    let redis = RedisServer::start(&[]);
    let mut conn = connected(&redis).await;
    let script = format!("{SHA256_LUA}\n{CHAIN_LUA}\nreturn hmac_sha256_hex(ARGV[1], ARGV[2])");
    let keys = [
        AuditKey::from_bytes([0; 32]),
        AuditKey::from_bytes([0xff; 32]),
        AuditKey::from_bytes(std::array::from_fn(|i| (i * 8) as u8)),
        AuditKey::random(),
    ];
    for key in &keys {
        for (name, message) in inputs().into_iter().step_by(7) {
            let lua: String = tokio::time::timeout(
                COMMAND_TIMEOUT,
                redis::cmd("EVAL")
                    .arg(&script)
                    .arg(0)
                    .arg(key.hmac_states_hex())
                    .arg(&message)
                    .query_async(&mut conn),
            )
            .await
            .expect("EVAL answered in time")
            .expect("EVAL succeeded");
            assert_eq!(
                lua,
                hex(&key.mac(&message)),
                "{name} under {}",
                key.to_hex()
            );
        }
    }

    // One entry sealed by audit_append under a key, then checked by the Rust chain.
    let tail = r#""session":"s","id":"r","event":"acked","user":null,"tab":null"#;
    let seal = format!(
        "{SHA256_LUA}\n{CHAIN_LUA}\naudit_append(KEYS[1], KEYS[2], ARGV[1], ARGV[2], '1000', \
         '60000', ARGV[3])\nreturn redis.call('LINDEX', KEYS[1], 0)"
    );
    let key = &keys[2];
    let line: String = tokio::time::timeout(
        COMMAND_TIMEOUT,
        redis::cmd("EVAL")
            .arg(seal)
            .arg(2)
            .arg("t:{s}:audit")
            .arg("t:{s}:audit:head")
            .arg(tail)
            .arg(sha256_hex(tail.as_bytes()))
            .arg(key.hmac_states_hex())
            .query_async(&mut conn),
    )
    .await
    .expect("EVAL answered in time")
    .expect("EVAL succeeded");
    let keyed = ChainKey::Keyed(std::sync::Arc::new(key.clone()));
    let read = askgate::audit::read_line(&line).unwrap();
    assert_eq!(
        read.hash,
        link_hash_with(&keyed, askgate::audit::GENESIS, 1, 1000, tail)
    );
    assert!(!read.hash_holds(), "keyed, it is not the unkeyed hash");
}
