//! What may depend on what, read from the crate graph (`cargo metadata`): the optimizer
//! builds without a runtime or a database driver, the daemon carries neither the lab nor
//! this test kit.

use std::collections::{BTreeSet, HashMap};
use std::process::Command;

use serde_json::Value;

/// The packages each package depends on for its library and binaries (normal and build
/// dependencies; dev-dependencies are the tests'), by name.
struct Graph {
    names: HashMap<String, String>,
    normal: HashMap<String, Vec<String>>,
}

impl Graph {
    fn of_workspace() -> Graph {
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        let manifest = concat!(env!("CARGO_MANIFEST_DIR"), "/../Cargo.toml");
        let out = Command::new(cargo)
            .args([
                "metadata",
                "--format-version",
                "1",
                "--manifest-path",
                manifest,
            ])
            .output()
            .expect("run cargo metadata");
        assert!(
            out.status.success(),
            "cargo metadata: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let meta: Value = serde_json::from_slice(&out.stdout).expect("metadata is JSON");
        let names = meta["packages"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| {
                (
                    p["id"].as_str().unwrap().to_string(),
                    p["name"].as_str().unwrap().to_string(),
                )
            })
            .collect();
        let normal = meta["resolve"]["nodes"]
            .as_array()
            .unwrap()
            .iter()
            .map(|node| {
                let deps = node["deps"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .filter(|d| {
                        d["dep_kinds"]
                            .as_array()
                            .unwrap()
                            .iter()
                            .any(|k| k["kind"].as_str() != Some("dev"))
                    })
                    .map(|d| d["pkg"].as_str().unwrap().to_string())
                    .collect();
                (node["id"].as_str().unwrap().to_string(), deps)
            })
            .collect();
        Graph { names, normal }
    }

    /// Every package `package` needs to build, by name (itself excluded).
    fn needs(&self, package: &str) -> BTreeSet<String> {
        let start = self
            .names
            .iter()
            .find(|(_, name)| *name == package)
            .map(|(id, _)| id.clone())
            .unwrap_or_else(|| panic!("no package {package} in the workspace"));
        let mut seen = BTreeSet::new();
        let mut todo = vec![start];
        while let Some(id) = todo.pop() {
            for dep in &self.normal[&id] {
                if seen.insert(dep.clone()) {
                    todo.push(dep.clone());
                }
            }
        }
        seen.iter().map(|id| self.names[id].clone()).collect()
    }
}

#[test]
fn the_optimizer_needs_no_runtime_and_no_database() {
    let needs = Graph::of_workspace().needs("matchmaker-optimizer");
    let found: Vec<&String> = needs
        .iter()
        .filter(|n| n.starts_with("tokio") || n.starts_with("sqlx"))
        .collect();
    assert!(found.is_empty(), "the optimizer builds with {found:?}");
}

#[test]
fn the_daemon_carries_neither_the_lab_nor_the_test_kit() {
    let needs = Graph::of_workspace().needs("matchmaker");
    assert!(needs.contains("matchmaker-optimizer"), "{needs:?}");
    for other in ["matchmaker-lab", "matchmaker-testkit"] {
        assert!(
            !needs.contains(other),
            "the daemon crate builds with {other}"
        );
    }
}

#[test]
fn the_test_kit_is_only_the_tests_dependency() {
    let graph = Graph::of_workspace();
    let dependents: Vec<&String> = graph
        .names
        .iter()
        .filter(|(id, _)| {
            graph.normal[*id]
                .iter()
                .any(|d| graph.names[d] == "matchmaker-testkit")
        })
        .map(|(_, name)| name)
        .filter(|name| name.as_str() != "matchmaker-lab")
        .collect();
    assert!(
        dependents.is_empty(),
        "packages that build with the test kit outside their tests: {dependents:?}"
    );
}
