//! How fast the harness dialect judges requests and responses.
//!
//! `cargo bench -p askgate-protocol`. The target: a typical request validated in under 5 µs
//! on one core.

use askgate_protocol::harness::{
    AskUserAnswer, AskUserResponse, HarnessQuestions, TopLevelExtras, ask_user_result,
    check_response, validate_args, validate_args_json,
};
use divan::black_box;
use serde_json::{Value, json};

fn main() {
    divan::main();
}

/// Two questions as a model typically asks them.
fn typical() -> Value {
    json!({"questions": [
        {"header": "Database", "question": "Which database should the service use?", "options": [
            {"label": "PostgreSQL", "description": "Relational, what the team already runs"},
            {"label": "SQLite", "description": "Embedded, no server to operate"},
            {"label": "DynamoDB", "description": "Managed key-value store"}
        ]},
        {"header": "Features", "question": "Which features belong in the first release?", "options": [
            {"label": "Search"}, {"label": "Export"}, {"label": "Sharing"}, {"label": "Audit log"}
        ], "multi_select": true}
    ]})
}

/// The largest request the harness allows: 10 questions × 6 options at full lengths, mixed
/// scripts (so the uniqueness fold takes its slow path).
fn maximal() -> Value {
    let scripts = ["Größe", "Ωμέγα", "東京都", "Привет", "مرحبا", "Ａｂｃ"];
    let fill = |seed: &str, chars: usize| -> String { seed.chars().cycle().take(chars).collect() };
    let questions: Vec<Value> = (0..10)
        .map(|q| {
            let options: Vec<Value> = (0..6)
                .map(|o| {
                    let label = format!("{q}{o}{}", fill(scripts[(q + o) % 6], 48));
                    json!({"label": label, "description": fill(scripts[o], 200)})
                })
                .collect();
            json!({
                "header": format!("{q}{}", fill(scripts[q % 6], 24)),
                "question": fill("Which of these would you pick, and why? ", 500),
                "options": options,
                "multi_select": q % 2 == 0,
            })
        })
        .collect();
    json!({ "questions": questions })
}

fn answers_for(questions: &HarnessQuestions) -> AskUserResponse {
    AskUserResponse::answered(
        questions
            .questions()
            .iter()
            .map(|q| {
                if q.multi_select {
                    AskUserAnswer::picked(
                        q.header.clone(),
                        q.options.iter().take(3).map(|o| o.label.clone()),
                    )
                } else {
                    AskUserAnswer::picked(q.header.clone(), [q.options[1].label.clone()])
                }
            })
            .collect(),
    )
}

#[divan::bench]
fn typical_request(bencher: divan::Bencher<'_, '_>) {
    let args = typical();
    bencher.bench(|| validate_args(black_box(&args), TopLevelExtras::Forbid));
}

#[divan::bench]
fn typical_request_from_json_text(bencher: divan::Bencher<'_, '_>) {
    let text = typical().to_string();
    bencher.bench(|| validate_args_json(black_box(&text), TopLevelExtras::Forbid));
}

#[divan::bench]
fn maximal_request(bencher: divan::Bencher<'_, '_>) {
    let args = maximal();
    assert!(validate_args(&args, TopLevelExtras::Forbid).is_ok());
    bencher.bench(|| validate_args(black_box(&args), TopLevelExtras::Forbid));
}

#[divan::bench(args = ["typical", "maximal"])]
fn check_response_of(bencher: divan::Bencher<'_, '_>, which: &str) {
    let args = if which == "typical" {
        typical()
    } else {
        maximal()
    };
    let questions = validate_args(&args, TopLevelExtras::Forbid).unwrap();
    let response = answers_for(&questions);
    assert!(check_response(&questions, &response).is_ok());
    bencher.bench(|| check_response(black_box(&questions), black_box(&response)));
}

#[divan::bench]
fn render_typical_result(bencher: divan::Bencher<'_, '_>) {
    let questions = validate_args(&typical(), TopLevelExtras::Forbid).unwrap();
    let response = answers_for(&questions);
    bencher.bench(|| {
        ask_user_result(black_box(&questions), black_box(&response)).map(|r| r.model_text())
    });
}

/// Mixed-script text as the differential test's generator writes it: ASCII next to Latin,
/// Greek, Cyrillic, Hebrew, Arabic, CJK, full-width forms and emoji, a script change at
/// nearly every character. Per character: `measure_text` is the printable rule and the
/// length, done for every string field.
fn mixed_text(chars: usize) -> String {
    let palette = "aZ7 é©ßΣςЖשع中ｱＡ😀ﬁ²'/<ı";
    palette.chars().cycle().take(chars).collect()
}

#[divan::bench(args = [16, 200, 1000])]
fn measure_mixed_text(bencher: divan::Bencher<'_, '_>, chars: usize) {
    let text = mixed_text(chars);
    bencher
        .counter(divan::counter::ItemsCount::new(chars))
        .bench(|| askgate_protocol::unicode::measure_text(black_box(&text), true));
}
