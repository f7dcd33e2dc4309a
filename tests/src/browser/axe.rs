//! axe-core's accessibility rules, run on the page through WebDriver.

use std::path::PathBuf;

use serde_json::json;

use super::Browser;
use crate::oracle::repo_root;

/// Where axe-core comes from when it is missing.
pub const AXE_HINT: &str = "install it with `npm install --prefix .venv/axe axe-core@4.14.1` in the \
                        repository, or set ASKGATE_AXE_CORE to its axe.min.js";

/// axe-core's script, from where [`AXE_HINT`] installs it.
fn axe_source() -> String {
    let path = std::env::var_os("ASKGATE_AXE_CORE")
        .map(PathBuf::from)
        .unwrap_or_else(|| repo_root().join(".venv/axe/node_modules/axe-core/axe.min.js"));
    std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("axe-core not found at {}: {e}; {AXE_HINT}", path.display()))
}

/// axe-core's violations on the whole page as it is now, each as `rule (impact): help` and
/// the elements it failed on. The script is injected through WebDriver, which the page's
/// Content-Security-Policy does not govern.
async fn axe_violations(browser: &Browser, axe: &str) -> Vec<String> {
    let loaded = browser
        .execute("return typeof window.axe === 'object';", json!([]))
        .await;
    if loaded != json!(true) {
        let inject = format!("{axe}\n;return typeof window.axe === 'object';");
        assert_eq!(
            browser.execute(&inject, json!([])).await,
            json!(true),
            "axe-core loaded"
        );
    }
    // No transition or animation midway (a colour being faded in would be measured half-way).
    browser
        .wait_until(
            "return document.getAnimations().every((a) => a.playState !== 'running');",
            json!([]),
        )
        .await;
    let start = "window.axeResult = null; \
        axe.run(document, {resultTypes: ['violations']}).then( \
          (r) => { window.axeResult = r.violations.map((v) => \
            `${v.id} (${v.impact}): ${v.help} — ` + \
            v.nodes.map((n) => n.target.join(' ') + ' [' + n.failureSummary + ']').join('; ')); }, \
          (e) => { window.axeResult = ['axe failed: ' + e]; }); \
        return true;";
    browser.execute(start, json!([])).await;
    let result = browser
        .wait_until("return window.axeResult;", json!([]))
        .await;
    serde_json::from_value(result).expect("a list of violations")
}

/// axe-core finds nothing on the page, light and dark, 360 px wide and at desktop width.
/// `what` names the state for the failure message.
///
/// The page is audited with motion reduced, which the stylesheet honours by dropping every
/// transition and animation: a card that starts to fold (on a timer) while axe-core runs is
/// then measured in its settled colours, not half-way through its fade. The page is left
/// dark, at desktop width, with motion on again.
pub async fn assert_accessible(browser: &Browser, what: &str) {
    let axe = axe_source();
    for (width, height) in [(360, 800), (1280, 900)] {
        browser.set_viewport_size(width, height).await;
        for dark in [false, true] {
            browser.emulate_media(dark, true).await;
            let violations = axe_violations(browser, &axe).await;
            assert!(
                violations.is_empty(),
                "{what}, {width} px, dark: {dark}: axe-core found\n{}",
                violations.join("\n")
            );
        }
    }
    browser.emulate_media(true, false).await;
}
