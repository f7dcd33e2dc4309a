//! The page's e-mail and URI checks against the gateway's, on the same strings: the edge
//! cases the MCP SDK's own differential test uses, and thousands of mutations of them. The
//! page must take exactly what the gateway takes, so that nothing it lets through is refused
//! after sending, and nothing the gateway would take is refused on the page.
#![cfg(target_os = "linux")]

use askgate_protocol::{Dialect, QuestionSet};
use askgate_tests::browser::page::open_page;
use askgate_tests::form_gen::{EMAIL_EDGES, EMAILS, URL_EDGES, URLS};
use askgate_tests::server::TestServer;
use rand::rngs::StdRng;
use rand::seq::IndexedRandom;
use rand::{Rng, SeedableRng};
use serde_json::{Value, json};

/// Mutations per kind.
const MUTATIONS: usize = 4000;

/// What mutations insert: characters and pieces each rule turns on.
const PIECES: [&str; 48] = [
    "a",
    "Z",
    "0",
    "9",
    ".",
    "..",
    "-",
    "_",
    "@",
    ":",
    "::",
    "/",
    "//",
    "[",
    "]",
    "?",
    "#",
    "\\",
    "%",
    "+",
    "!",
    "(",
    "\"",
    ",",
    " ",
    "\t",
    "\u{200b}",
    "\u{7}",
    "é",
    "ü",
    "中",
    "١",
    "Ⅷ",
    "²",
    "test",
    "local",
    "localhost",
    ".onion",
    "0x",
    "1.2.3.4",
    "256",
    "65535",
    "65536",
    "http:",
    "https://",
    "file:",
    "ws://",
    "mailto:",
];

/// More seeds for what the SDK's edges leave thin: IPv6 hosts, dotted numbers, ports.
const MORE_URIS: [&str; 16] = [
    "http://[1:2:3:4:5:6:7:8]/",
    "http://[::ffff:1.2.3.4]",
    "http://[1.2.3.4::]",
    "http://[1:2:3:4:5:6:7::]",
    "http://[1::2::3]",
    "http://[::1]:80",
    "http://[::1]x",
    "http://[fe80::1%25eth0]",
    "http://01.2.3.4",
    "http://0x7f.1",
    "http://1.2.3",
    "http://1.2.3.4.",
    "http://u:p@x.y:8/",
    "http://x:",
    "ftp://@",
    "foo://",
];

/// `count` strings made from `seeds` by one to three random edits each.
fn mutations(seeds: &[&str], count: usize, rng: &mut StdRng) -> Vec<String> {
    (0..count)
        .map(|_| {
            let mut chars: Vec<char> = seeds.choose(rng).unwrap().chars().collect();
            for _ in 0..rng.random_range(1..=3) {
                let at = rng.random_range(0..=chars.len());
                match rng.random_range(0..3) {
                    0 if at < chars.len() => {
                        chars.remove(at);
                    }
                    1 if at < chars.len() => {
                        let piece = PIECES.choose(rng).unwrap();
                        chars.splice(at..=at, piece.chars());
                    }
                    _ => {
                        let piece = PIECES.choose(rng).unwrap();
                        chars.splice(at..at, piece.chars());
                    }
                }
            }
            chars.into_iter().collect()
        })
        .collect()
}

/// Whether the gateway takes `text` in a form field of `format`.
fn gateway_takes(form: &QuestionSet, text: &str) -> bool {
    form.settle_answer(&json!({"content": {"v": text}})).is_ok()
}

fn form_with(format: &str) -> QuestionSet {
    let request = json!({"message": "m", "schema": {"type": "object",
        "properties": {"v": {"type": "string", "format": format}}, "required": ["v"]}});
    QuestionSet::validate(Dialect::parse("form").unwrap(), &request).unwrap()
}

/// The page's verdict on each of `texts` with its `check` (`isEmail` or `isUri`).
async fn page_takes(
    browser: &askgate_tests::browser::Browser,
    check: &str,
    texts: &[String],
) -> Vec<bool> {
    browser
        .execute(
            "import('/js/formats.js').then((m) => { window.__formats = m; }); return null;",
            json!([]),
        )
        .await;
    let verdicts = browser
        .wait_until(
            "const m = window.__formats; \
             return m ? arguments[1].map((text) => m[arguments[0]](text)) : null;",
            json!([check, texts]),
        )
        .await;
    serde_json::from_value(verdicts).expect("a verdict for each text")
}

async fn compare(format: &str, check: &str, seeds: &[&str], seed: u64) {
    let server = TestServer::start().await;
    let browser = open_page(&server, "s").await;
    let mut rng = StdRng::seed_from_u64(seed);
    let mut texts: Vec<String> = seeds.iter().map(|s| (*s).to_owned()).collect();
    texts.extend(mutations(seeds, MUTATIONS, &mut rng));
    let form = form_with(format);
    let page = page_takes(&browser, check, &texts).await;
    let differ: Vec<Value> = texts
        .iter()
        .zip(&page)
        .filter(|(text, page)| gateway_takes(&form, text) != **page)
        .map(|(text, page)| json!({"text": text, "page_takes": page}))
        .collect();
    let taken = page.iter().filter(|p| **p).count();
    assert!(
        differ.is_empty(),
        "{} of {} {format} strings judged differently (seed {seed}); the first: {:#}",
        differ.len(),
        texts.len(),
        Value::Array(differ.into_iter().take(20).collect())
    );
    // Both sides of each rule were tried.
    assert!(
        taken > texts.len() / 20 && taken < texts.len() * 19 / 20,
        "{taken} of {} taken: the mutations test little",
        texts.len()
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn the_page_takes_exactly_the_e_mail_addresses_the_gateway_takes() {
    let seeds: Vec<&str> = EMAILS.iter().chain(&EMAIL_EDGES).copied().collect();
    compare("email", "isEmail", &seeds, 24).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn the_page_takes_exactly_the_uris_the_gateway_takes() {
    let seeds: Vec<&str> = URLS
        .iter()
        .chain(&URL_EDGES)
        .chain(&MORE_URIS)
        .copied()
        .collect();
    compare("uri", "isUri", &seeds, 25).await;
}
