//! `askgate demo`: the gateway and a demo agent in one process.
//!
//! The agent is an ordinary [`askgate_client::Client`] talking to the gateway over a real
//! socket, exactly as a remote agent would. It opens session `demo`, prints the link, and asks
//! a short, realistic sequence, printing each outcome as the model would read it. Stopped and
//! started again on the same data directory, it goes on where it stopped.
//!
//! - `edits`: what a person's edit of an approval changed, as the agent prints it.
//! - [`progress`]: how far the demo agent got, kept in the data directory.

mod edits;
mod progress;

use std::time::Duration;

use anyhow::Context as _;
use askgate_client::{Ask, Client};
use clap::Args;
use serde_json::json;

use self::progress::Progress;
use super::serve::{ServeArgs, listen};
use crate::server;

/// Flags of `askgate demo`.
#[derive(Debug, Args)]
pub struct DemoArgs {
    /// The session the demo agent asks in.
    #[arg(long, default_value = "demo")]
    pub session: String,

    /// Ask the sequence once and exit, instead of serving on until Ctrl-C.
    #[arg(long)]
    pub once: bool,

    /// The gateway's flags.
    #[command(flatten)]
    pub serve: ServeArgs,
}

/// Runs the demo until the sequence ends (with `--once`) or Ctrl-C.
///
/// # Errors
/// The gateway cannot start, or the demo agent cannot reach it.
pub(super) async fn run(args: DemoArgs) -> anyhow::Result<()> {
    let addrs = listen::resolve(&args.serve.listen).await?;
    let config = args.serve.to_config()?;
    // The demo agent presents the first key, as the gateway reads them (trimmed, none empty).
    // A scoped one must hold the demo's session, or every ask would be refused.
    let first = config.agent_keys.first();
    if let Some(key) = first {
        key.scope().permit(&args.session).map_err(|why| {
            anyhow::anyhow!(
                "the demo agent presents the first --agent-key: {why}; pass a --session it holds"
            )
        })?;
    }
    let key = first.map(|key| key.secret().to_owned());
    super::serve::raise_open_file_limit();
    let listeners = listen::bind(&addrs, &config).await?;
    // The agent connects to the first address, as the viewer link names it.
    let addr = listeners[0].local_addr()?;
    let state = server::prepare(&listeners[0], &config).await?;
    let stop = tokio_util::sync::CancellationToken::new();
    let gateway = {
        let stop = stop.clone();
        tokio::spawn(async move {
            server::serve_all(listeners, state, &config, stop.cancelled_owned()).await
        })
    };
    let agent = async {
        let client = Client::connect(&format!("http://{addr}"), key)
            .await
            .context("the demo agent could not connect")?;
        let opened = client.open(Some(&args.session)).await?;
        println!(
            "\naskgate demo: an agent is asking questions in session {:?}.",
            opened.session
        );
        println!(
            "Open this link to answer them (any number of tabs):\n\n    {}\n",
            opened.viewer_url
        );
        let sets = sequence(&opened.session);
        let mut progress = Progress::load(&args.serve.stored.data_dir, &opened.session, sets.len());
        for (i, model_text) in progress.finished().iter().enumerate() {
            println!(
                "[agent] question set {} was answered before the restart; the model read: {model_text}",
                i + 1
            );
        }
        for (i, ask) in sets.into_iter().enumerate().skip(progress.finished().len()) {
            println!("[agent] asking question set {} ...", i + 1);
            let asked = ask.questions.clone();
            let answered = client.ask(ask).await?;
            // An approval a person edited: what they changed, before what the model reads.
            for line in edits::edit_lines(&asked, answered.result()) {
                println!("[agent] {line}");
            }
            let model_text = answered.model_text().unwrap_or("(nothing: withdrawn)");
            // A text of several lines (an approval's, a line per call) stays readable.
            println!(
                "[agent] {} -> the model reads: {}\n",
                answered.outcome().as_str(),
                model_text.replace('\n', "\n    "),
            );
            progress.finish(model_text.to_owned());
        }
        println!("[agent] done. The gateway keeps serving; press Ctrl-C to stop.");
        anyhow::Ok(())
    };
    tokio::select! {
        result = agent => {
            result?;
            if !args.once {
                super::serve::shutdown_signal().await;
            }
        }
        () = super::serve::shutdown_signal() => {}
    }
    stop.cancel();
    gateway.await.context("the gateway task failed")?
}

/// What the demo agent asks: a single choice, a multi-select with descriptions, two tool
/// calls to approve, and a question with a 60-second deadline.
///
/// The questions say nothing about how to answer: the page puts its own hint ("Pick one or
/// more") under every multi-select, and a second one in the text would repeat it.
///
/// Each has a fixed id: a demo stopped while one is open leaves it open in the store (the
/// third with its deadline running), and the next run asks the same request again and picks
/// it up, instead of showing it next to a fresh copy.
fn sequence(session: &str) -> Vec<Ask> {
    vec![
        Ask::new(
            session,
            json!([{
                "header": "Database",
                "question": "The new billing service needs a database. Which one should I set up?",
                "options": [
                    {"label": "PostgreSQL", "description": "What the team already runs in production"},
                    {"label": "SQLite", "description": "Embedded: nothing extra to operate"},
                    {"label": "DynamoDB", "description": "Managed, scales without tuning"}
                ]
            }]),
        )
        .with_id("demo-database")
        .with_title("Setting up the billing service"),
        Ask::new(
            session,
            json!([{
                "header": "Features",
                "question": "Which features belong in the first release?",
                "options": [
                    {"label": "Invoices", "description": "PDF invoices emailed each month"},
                    {"label": "Usage metering", "description": "Charge per API call"},
                    {"label": "Coupons", "description": "Percentage and fixed discounts"},
                    {"label": "Tax rules", "description": "VAT and sales tax by region"}
                ],
                "multi_select": true
            }, {
                "header": "Currency",
                "question": "Which currency should prices be stored in?",
                "options": [{"label": "EUR"}, {"label": "USD"}]
            }]),
        )
        .with_id("demo-release-scope")
        .with_title("Scoping the first release"),
        Ask::approval(
            session,
            json!([{
                "name": "run_migration",
                "description": "Apply a schema migration to the billing database.",
                "args": {"database": "billing", "migration": "0007_add_invoices.sql", "dry_run": false},
                "args_schema": {
                    "type": "object",
                    "properties": {
                        "database": {"type": "string", "enum": ["billing", "billing_staging"]},
                        "migration": {"type": "string", "minLength": 1},
                        "dry_run": {"type": "boolean"}
                    },
                    "required": ["database", "migration"],
                    "additionalProperties": false
                },
                "decisions": ["approve", "edit", "reject"]
            }, {
                "name": "send_email",
                "description": "Tell the team the migration ran.",
                "args": {"to": "billing-team@example.com", "body": "Migration 0007 applied."},
                "decisions": ["approve", "reject", "respond"]
            }]),
        )
        .with_id("demo-approval")
        .with_title("About to change the billing database"),
        Ask::new(
            session,
            json!([{
                "header": "Deploy",
                "question": "The migration is ready. Deploy now, or wait for the Monday window?",
                "options": [
                    {"label": "Deploy now", "description": "About 2 minutes of read-only mode"},
                    {"label": "Wait for Monday", "description": "Scheduled for 06:00 UTC"}
                ]
            }]),
        )
        .with_id("demo-deploy")
        .with_title("You have 60 seconds: the deploy window is closing")
        .with_timeout(Duration::from_secs(60)),
    ]
}
