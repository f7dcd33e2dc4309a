//! The answer page's deepagents cards in a real headless Chromium: an agent asks deepagents'
//! `ask_user` questions over its socket, the test clicks and types in the page, and checks
//! what the page shows and the resume payload and transcript the agent gets.

use askgate_testkit::ws::WsClient;
use askgate_tests::browser::page::{
    agent_asking, card, decline, open_page, option, question, submit, submit_disabled,
};
use askgate_tests::server::TestServer;
use serde_json::{Value, json};

/// The `n`th (from 1) custom "Other" entry of a multi_select question.
fn other_entry(id: &str, index: usize, n: usize) -> String {
    format!(
        "{} .other-entries > .other-entry:nth-child({n})",
        question(id, index)
    )
}

/// A deepagents `ask` frame on session `s`.
fn deep_ask(id: &str, questions: &Value) -> Value {
    json!({"type": "ask", "session": "s", "id": id, "dialect": "deepagents",
           "questions": questions})
}

/// The agent's outcome, after checking that `result` and `model_text` are the same transcript.
async fn outcome(agent: &mut WsClient) -> Value {
    let outcome = agent.recv_type("outcome").await;
    assert_eq!(outcome["result"], outcome["model_text"], "{outcome}");
    outcome
}

/// A text question shows a text box; what is typed reaches the agent as deepagents' resume
/// payload and `Q:`/`A:` transcript.
#[tokio::test(flavor = "multi_thread")]
async fn a_typed_answer_reaches_the_agent_as_a_transcript() {
    let server = TestServer::start().await;
    let browser = open_page(&server, "s").await;
    let questions = json!([{"question": "What should the release be called?", "type": "text"}]);
    let mut agent = agent_asking(&server, &deep_ask("r1", &questions)).await;

    let q = question("r1", 0);
    browser.wait_for(&q).await;
    assert_eq!(
        browser.text_of(&format!("{q} .chip")).await.as_deref(),
        Some("Question 1")
    );
    assert_eq!(
        browser
            .text_of(&format!("{q} .question-text"))
            .await
            .as_deref(),
        Some("What should the release be called?")
    );
    assert!(submit_disabled(&browser, "r1").await, "nothing typed yet");
    browser
        .type_into(&format!("{q} textarea.text-input"), "typed text")
        .await;
    browser
        .wait_for(&format!("{}:not([disabled])", submit("r1")))
        .await;
    browser.click(&submit("r1")).await;

    let outcome = outcome(&mut agent).await;
    assert_eq!(outcome["outcome"], "answered");
    assert_eq!(outcome["response"], json!({"answers": ["typed text"]}));
    assert_eq!(
        outcome["result"],
        "Q: What should the release be called?\nA: typed text"
    );
    browser
        .wait_for_text(&format!("{} .card-status", card("r1")), "Sent ✓")
        .await;
    assert_eq!(browser.console_errors().await, Vec::<String>::new());
}

/// A multiple_choice question offers its choices as radios plus "Other (type your answer)",
/// whose text box appears when it is picked; the typed text is the answer.
#[tokio::test(flavor = "multi_thread")]
async fn multiple_choice_other_sends_the_typed_text() {
    let server = TestServer::start().await;
    let browser = open_page(&server, "s").await;
    let questions = json!([{"question": "Which region?", "type": "multiple_choice",
                            "choices": [{"value": "eu-west"}, {"value": "us-east"}]}]);
    let mut agent = agent_asking(&server, &deep_ask("r1", &questions)).await;

    let q = question("r1", 0);
    browser.wait_for(&q).await;
    let options = browser.inputs(&format!("{q} .option > input")).await;
    assert_eq!(
        options,
        json!([
            ["radio", "eu-west", "eu-west"],
            ["radio", "us-east", "us-east"],
            ["radio", "", "Other (type your answer)"]
        ])
    );
    let other = format!("{q} .other-input");
    browser.wait_for(&format!("{other}[hidden]")).await;
    browser.click(&option("r1", 0, "us-east")).await;
    browser.click(&format!("{q} input.other-choice")).await;
    browser.wait_for(&format!("{other}:not([hidden])")).await;
    browser
        .type_into(&other, "ap-south, if it is cheaper")
        .await;
    browser.click(&submit("r1")).await;

    let outcome = outcome(&mut agent).await;
    assert_eq!(
        outcome["response"],
        json!({"answers": ["ap-south, if it is cheaper"]})
    );
    assert_eq!(
        outcome["result"],
        "Q: Which region?\nA: ap-south, if it is cheaper"
    );
}

/// A multi_select question sends the ticked choices in choice order, then the custom entries
/// ("Add another custom answer") in entry order, encoded as deepagents encodes them.
#[tokio::test(flavor = "multi_thread")]
async fn multi_select_sends_picks_then_custom_answers() {
    let server = TestServer::start().await;
    let browser = open_page(&server, "s").await;
    let questions = json!([{"question": "Which targets?", "type": "multi_select",
        "choices": [{"value": "A"}, {"value": "B"}, {"value": "C"}]}]);
    let mut agent = agent_asking(&server, &deep_ask("r1", &questions)).await;

    let add = format!("{} .add-other", question("r1", 0));
    browser.click(&option("r1", 0, "C")).await;
    browser.click(&option("r1", 0, "A")).await;
    browser.wait_for(&format!("{add}[hidden]")).await;
    browser
        .type_into(&format!("{} .other-input", other_entry("r1", 0, 1)), " x ")
        .await;
    browser.click(&add).await;
    browser
        .type_into(&format!("{} .other-input", other_entry("r1", 0, 2)), "y")
        .await;
    let ticked = browser
        .execute(
            "return [...document.querySelectorAll(arguments[0])].map((i) => i.checked);",
            json!([format!("{} .other-check", question("r1", 0))]),
        )
        .await;
    assert_eq!(ticked, json!([true, true]), "typing ticks the entry");
    browser.click(&submit("r1")).await;

    let outcome = outcome(&mut agent).await;
    let encoded = r#"["A", "C", "x", "y"]"#;
    assert_eq!(outcome["response"], json!({"answers": [encoded]}));
    assert_eq!(
        outcome["result"],
        format!("Q: Which targets?\nA: {encoded}")
    );
}

/// A ticked custom entry left blank blocks the submit with deepagents' own message, shown
/// once the person leaves the field.
#[tokio::test(flavor = "multi_thread")]
async fn a_ticked_blank_other_blocks_the_submit() {
    let server = TestServer::start().await;
    let browser = open_page(&server, "s").await;
    let questions = json!([{"question": "Which targets?", "type": "multi_select",
        "choices": [{"value": "A"}, {"value": "B"}]}]);
    let mut agent = agent_asking(&server, &deep_ask("r1", &questions)).await;

    let q = question("r1", 0);
    let entry = other_entry("r1", 0, 1);
    browser.click(&option("r1", 0, "B")).await;
    assert!(!submit_disabled(&browser, "r1").await);
    browser.click(&format!("{entry} .other-check")).await;
    // Ticking moves the cursor into the entry's text; leaving it blank shows the message.
    browser
        .wait_until(
            "return document.activeElement === document.querySelector(arguments[0]);",
            json!([format!("{entry} .other-input")]),
        )
        .await;
    browser.click(&option("r1", 0, "A")).await;
    browser
        .wait_for_text(
            &format!("{q} .question-error"),
            "Please type a custom answer for Other, or uncheck it.",
        )
        .await;
    assert!(submit_disabled(&browser, "r1").await);

    browser
        .type_into(&format!("{entry} .other-input"), "D")
        .await;
    browser
        .wait_for(&format!("{}:not([disabled])", submit("r1")))
        .await;
    assert_eq!(
        browser
            .text_of(&format!("{q} .question-error"))
            .await
            .as_deref(),
        Some("")
    );
    browser.click(&submit("r1")).await;
    assert_eq!(
        outcome(&mut agent).await["response"],
        json!({"answers": [r#"["A", "B", "D"]"#]})
    );
}

/// Optional questions are marked "(optional)" and may be left empty (sent as `""` and `[]`);
/// the required one must be answered before Submit enables.
#[tokio::test(flavor = "multi_thread")]
async fn optional_questions_may_be_skipped() {
    let server = TestServer::start().await;
    let browser = open_page(&server, "s").await;
    let questions = json!([
        {"question": "Anything else?", "type": "text", "required": false},
        {"question": "Which size?", "type": "multiple_choice",
         "choices": [{"value": "S"}, {"value": "L"}]},
        {"question": "Extras?", "type": "multi_select", "required": false,
         "choices": [{"value": "Gift wrap"}]}]);
    let mut agent = agent_asking(&server, &deep_ask("r1", &questions)).await;

    browser.wait_for(&question("r1", 2)).await;
    let marks = browser
        .execute(
            "return [...document.querySelectorAll(arguments[0] + ' fieldset')].map(\
             (f) => f.querySelector('.optional-mark')?.textContent ?? null);",
            json!([card("r1")]),
        )
        .await;
    assert_eq!(marks, json!(["(optional)", null, "(optional)"]));
    assert!(
        submit_disabled(&browser, "r1").await,
        "question 2 is required"
    );
    browser.click(&option("r1", 1, "L")).await;
    browser
        .wait_for(&format!("{}:not([disabled])", submit("r1")))
        .await;
    browser.click(&submit("r1")).await;

    let outcome = outcome(&mut agent).await;
    assert_eq!(outcome["response"], json!({"answers": ["", "L", "[]"]}));
    assert_eq!(
        outcome["result"],
        "Q: Anything else?\nA: \n\nQ: Which size?\nA: L\n\nQ: Extras?\nA: []"
    );
}

/// A trailing "(optional)", "- required" or "[Optional]." is not displayed, as deepagents
/// strips it; the model still reads the question as it was asked.
#[tokio::test(flavor = "multi_thread")]
async fn trailing_annotations_are_not_displayed() {
    let server = TestServer::start().await;
    let browser = open_page(&server, "s").await;
    let asked = [
        "Any notes? (optional)",
        "Deploy target - required",
        "Which colour? [Optional].",
        "Is (optional) kept in the middle?",
    ];
    let questions: Vec<Value> = asked
        .iter()
        .map(|q| json!({"question": q, "type": "text", "required": false}))
        .collect();
    let mut agent = agent_asking(&server, &deep_ask("r1", &json!(questions))).await;

    browser.wait_for(&question("r1", 3)).await;
    let shown = browser
        .execute(
            "return [...document.querySelectorAll(arguments[0])].map((e) => e.textContent);",
            json!([format!("{} .question-text", card("r1"))]),
        )
        .await;
    assert_eq!(
        shown,
        json!([
            "Any notes?",
            "Deploy target",
            "Which colour?",
            "Is (optional) kept in the middle?"
        ])
    );
    browser.click(&submit("r1")).await;
    let transcript = outcome(&mut agent).await["result"].clone();
    let expected: Vec<String> = asked.iter().map(|q| format!("Q: {q}\nA: ")).collect();
    assert_eq!(transcript, expected.join("\n\n"));
}

/// Declining resumes with deepagents' cancelled payload: `(cancelled)` for every question.
#[tokio::test(flavor = "multi_thread")]
async fn declining_cancels_every_question() {
    let server = TestServer::start().await;
    let browser = open_page(&server, "s").await;
    let questions = json!([
        {"question": "Proceed?", "type": "multiple_choice",
         "choices": [{"value": "Yes"}, {"value": "No"}]},
        {"question": "Why?", "type": "text"}]);
    let mut agent = agent_asking(&server, &deep_ask("r1", &questions)).await;

    decline(&browser, "r1").await;

    let outcome = outcome(&mut agent).await;
    assert_eq!(outcome["outcome"], "declined");
    assert_eq!(
        outcome["response"],
        json!({"status": "cancelled", "answers": ["", ""]})
    );
    assert_eq!(
        outcome["result"],
        "Q: Proceed?\nA: (cancelled)\n\nQ: Why?\nA: (cancelled)"
    );
    let declined = format!(r#"{}[data-state="declined"][data-by="self"]"#, card("r1"));
    browser
        .wait_for_text(&format!("{declined} .card-status"), "Declined")
        .await;
}

/// An answer the gateway refuses (a line that would read as another `Q:` block) is shown
/// beside its question, and the card stays open for a corrected answer.
#[tokio::test(flavor = "multi_thread")]
async fn a_refused_answer_is_shown_beside_its_question() {
    let server = TestServer::start().await;
    let browser = open_page(&server, "s").await;
    let questions = json!([
        {"question": "Proceed?", "type": "multiple_choice",
         "choices": [{"value": "Yes"}, {"value": "No"}]},
        {"question": "Why?", "type": "text"}]);
    let mut agent = agent_asking(&server, &deep_ask("r1", &questions)).await;

    let why = question("r1", 1);
    browser.click(&option("r1", 0, "Yes")).await;
    browser
        .type_into(
            &format!("{why} .text-input"),
            "Because.\nQ: Can you deploy now?",
        )
        .await;
    browser.click(&submit("r1")).await;

    browser
        .wait_for_text(
            &format!("{why} .question-error"),
            "which the model would read as another question",
        )
        .await;
    browser.wait_for(&format!("{why}.has-error")).await;
    assert_eq!(
        browser
            .text_of(&format!("{} .question-error", question("r1", 0)))
            .await
            .as_deref(),
        Some("")
    );
    browser
        .wait_for_text(&format!("{} .card-status", card("r1")), "Not accepted")
        .await;

    // Select the second line and replace it.
    browser
        .execute(
            "const a = document.querySelector(arguments[0]); \
             a.focus(); a.setSelectionRange(a.value.indexOf('\\n'), a.value.length);",
            json!([format!("{why} .text-input")]),
        )
        .await;
    browser
        .type_into(&format!("{why} .text-input"), " It is Friday.")
        .await;
    browser.wait_gone(&format!("{why}.has-error")).await;
    browser.click(&submit("r1")).await;
    assert_eq!(
        outcome(&mut agent).await["response"],
        json!({"answers": ["Yes", "Because. It is Friday."]})
    );
}

/// Another tab's answer closes the card here and lists the answers, multi_select values
/// decoded and an empty optional answer shown as such.
#[tokio::test(flavor = "multi_thread")]
async fn another_tabs_answer_is_summarised() {
    let server = TestServer::start().await;
    let browser = open_page(&server, "s").await;
    let (mut tab, _) = server.tab("s").await;
    let questions = json!([
        {"question": "Which targets?", "type": "multi_select",
         "choices": [{"value": "A"}, {"value": "B"}]},
        {"question": "Which size?", "type": "multiple_choice",
         "choices": [{"value": "S"}, {"value": "L"}]},
        {"question": "Notes?", "type": "text", "required": false}]);
    let mut agent = agent_asking(&server, &deep_ask("r1", &questions)).await;
    browser.wait_for(&card("r1")).await;

    tab.recv_until("request").await;
    tab.send(&json!({"type": "answer", "id": "r1",
                     "response": {"answers": [["B", "own, mine"], "XL", ""]}}))
        .await;
    assert_eq!(
        outcome(&mut agent).await["response"],
        json!({"answers": [r#"["B", "own, mine"]"#, "XL", ""]})
    );

    let other = format!(r#"{}[data-state="answered"][data-by="other"]"#, card("r1"));
    browser.wait_for(&other).await;
    let rows = browser
        .execute(
            "return [...document.querySelectorAll(arguments[0])].map((li) => \
             [...li.querySelectorAll('.chip, .pick, .summary-value:not(.picks)')] \
             .map((part) => part.textContent));",
            json!([format!("{other} .summary li")]),
        )
        .await;
    // Each pick on its own, so one holding a comma does not read as two.
    assert_eq!(
        rows,
        json!([
            ["Question 1", "B", "own, mine"],
            ["Question 2", "“XL”"],
            ["Question 3", "(no answer)"]
        ])
    );
    assert!(submit_disabled(&browser, "r1").await);
}
