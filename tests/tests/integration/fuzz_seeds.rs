//! Every fuzz target's seed corpus (`fuzz/seeds.py`: the conformance vectors, the examples,
//! the hand-written seeds and any kept input in `fuzz/seeds/<target>/`), replayed through the
//! targets' own bodies in an ordinary build: each target still compiles against today's code,
//! and no seed, a past crash's input among them, fails its target's properties. Coverage-guided
//! fuzzing itself is `scripts/fuzz` (fuzz/README.md), run apart from the test suite.

use std::path::{Path, PathBuf};
use std::process::Command;

use askgate_fuzz::targets;
use askgate_tests::oracle::repo_root;

/// Writes the corpora into a temporary directory; the paths of each target's seeds.
fn seeds(into: &Path) -> Vec<(String, Vec<PathBuf>)> {
    let status = Command::new("python3")
        .arg(repo_root().join("fuzz/seeds.py"))
        .arg(into)
        .stdout(std::process::Stdio::null())
        .status()
        .expect("python3 runs fuzz/seeds.py");
    assert!(status.success(), "fuzz/seeds.py failed: {status}");
    let mut corpora: Vec<(String, Vec<PathBuf>)> = std::fs::read_dir(into)
        .expect("the corpora's directory")
        .map(|entry| {
            let path = entry.expect("a corpus").path();
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            let mut inputs: Vec<PathBuf> = std::fs::read_dir(&path)
                .expect("a corpus directory")
                .map(|seed| seed.expect("a seed").path())
                .collect();
            inputs.sort();
            (name, inputs)
        })
        .collect();
    corpora.sort();
    corpora
}

#[test]
fn every_seed_passes_its_fuzz_target() {
    let scratch = std::env::temp_dir().join(format!(
        "askgate-fuzz-seeds-{}-{}",
        std::process::id(),
        rand::random::<u32>()
    ));
    let corpora = seeds(&scratch.join("corpus"));
    let log_file = scratch.join("log-00000001.wal");
    let mut names: Vec<&str> = corpora.iter().map(|(name, _)| name.as_str()).collect();
    names.sort_unstable();
    let mut expected: Vec<&str> = targets::PURE.iter().map(|(name, _)| *name).collect();
    expected.push("durable_log");
    expected.sort_unstable();
    assert_eq!(names, expected, "seeds.py writes a corpus for every target");
    for (name, inputs) in &corpora {
        assert!(!inputs.is_empty(), "{name}: no seeds");
        for input in inputs {
            let data = std::fs::read(input).expect("a seed reads");
            // A failing seed names itself before its target's panic ends the test.
            eprintln!("fuzz_seeds: {name} {}", input.display());
            match targets::PURE.iter().find(|(pure, _)| pure == name) {
                Some((_, target)) => target(&data),
                None => targets::durable_log(&log_file, &data),
            }
        }
    }
    std::fs::remove_dir_all(&scratch).expect("the scratch directory is removed");
}
