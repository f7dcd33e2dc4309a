//! How far the demo agent got, kept in the data directory: a demo stopped and started again
//! goes on where it stopped (its open question, still open in the store, is asked again by id
//! and picked up), instead of starting over.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// The question sets finished so far, in order, with what the model read for each.
#[derive(Debug, Default, Serialize, Deserialize)]
pub(super) struct Progress {
    /// The session they were asked in.
    session: String,
    /// What the model read, for each finished set.
    finished: Vec<String>,
    #[serde(skip)]
    path: PathBuf,
}

impl Progress {
    /// The progress of `session` kept in `data_dir`, or none yet. A record of another session,
    /// or of a run that finished every one of `sets`, or one that cannot be read, starts over.
    pub(super) fn load(data_dir: &Path, session: &str, sets: usize) -> Progress {
        let path = data_dir.join("demo-progress.json");
        let kept = std::fs::read(&path)
            .ok()
            .and_then(|bytes| serde_json::from_slice::<Progress>(&bytes).ok())
            .filter(|kept| kept.session == session && kept.finished.len() < sets);
        Progress {
            path,
            ..kept.unwrap_or_else(|| Progress {
                session: session.to_owned(),
                ..Progress::default()
            })
        }
    }

    /// What the model read for each set finished before this run.
    pub(super) fn finished(&self) -> &[String] {
        &self.finished
    }

    /// Notes the next set as finished, the model having read `model_text`. A failure to keep
    /// it only costs the next run a question asked again, so it is reported, not fatal.
    pub(super) fn finish(&mut self, model_text: String) {
        self.finished.push(model_text);
        let written = serde_json::to_vec(self)
            .map_err(std::io::Error::other)
            .and_then(|json| std::fs::write(&self.path, json));
        if let Err(error) = written {
            eprintln!(
                "askgate demo: could not note the progress in {}: {error}",
                self.path.display()
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn progress_survives_a_restart_and_starts_over_when_done() {
        let dir =
            std::env::temp_dir().join(format!("askgate-demo-progress-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let mut progress = Progress::load(&dir, "demo", 3);
        assert!(progress.finished().is_empty());
        progress.finish("first".into());
        let again = Progress::load(&dir, "demo", 3);
        assert_eq!(again.finished(), ["first"]);
        assert!(Progress::load(&dir, "other", 3).finished().is_empty());
        let mut done = again;
        done.finish("second".into());
        done.finish("third".into());
        assert!(Progress::load(&dir, "demo", 3).finished().is_empty());
        std::fs::remove_dir_all(&dir).ok();
    }
}
