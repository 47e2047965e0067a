//! Every link to a heading in the README and `docs/` lands on a heading that exists, by
//! GitHub's rules for heading anchors.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Component, Path, PathBuf};

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

/// The markdown pages whose links are checked: the README, `docs/*.md`, the deploy README.
fn pages() -> Vec<PathBuf> {
    let mut pages = vec![
        PathBuf::from("README.md"),
        PathBuf::from("deploy/README.md"),
    ];
    for entry in std::fs::read_dir(Path::new(ROOT).join("docs")).expect("read docs/") {
        let name = entry.expect("a docs entry").file_name();
        let name = name.to_string_lossy();
        if name.ends_with(".md") {
            pages.push(Path::new("docs").join(name.as_ref()));
        }
    }
    pages.sort();
    pages
}

/// The lines of a page outside fenced code blocks, numbered from 1.
fn prose_lines(text: &str) -> Vec<(usize, &str)> {
    let mut in_code = false;
    let mut lines = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim_start().starts_with("```") {
            in_code = !in_code;
        } else if !in_code {
            lines.push((i + 1, line));
        }
    }
    lines
}

/// GitHub's anchor of a heading: markup dropped (code ticks, link targets), lower case,
/// every character but letters, digits, `-`, `_` and spaces removed, spaces as `-`.
fn slug(heading: &str) -> String {
    let mut text = String::new();
    let mut rest = heading;
    // `[text](target)` keeps its text.
    while let Some(open) = rest.find('[') {
        let Some(close) = rest[open..].find("](").map(|c| open + c) else {
            break;
        };
        let Some(end) = rest[close..].find(')').map(|e| close + e) else {
            break;
        };
        text.push_str(&rest[..open]);
        text.push_str(&rest[open + 1..close]);
        rest = &rest[end + 1..];
    }
    text.push_str(rest);
    text.to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || matches!(c, '-' | '_' | ' '))
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

/// The anchors of a page's headings (a repeated heading gets `-1`, `-2`, ...).
fn anchors(text: &str) -> BTreeSet<String> {
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    let mut anchors = BTreeSet::new();
    for (_, line) in prose_lines(text) {
        let hashes = line.chars().take_while(|&c| c == '#').count();
        if !(1..=6).contains(&hashes) || !line[hashes..].starts_with(' ') {
            continue;
        }
        let slug = slug(line[hashes..].trim().trim_end_matches('#').trim());
        let n = seen.entry(slug.clone()).or_default();
        anchors.insert(if *n == 0 { slug } else { format!("{slug}-{n}") });
        *n += 1;
    }
    anchors
}

/// `(target, anchor)` of each `](target#anchor)` link on a line (not web addresses).
fn anchored_links(line: &str) -> Vec<(&str, &str)> {
    line.match_indices("](")
        .filter_map(|(at, _)| {
            let link = &line[at + 2..];
            let link = &link[..link.find(')')?];
            let (target, anchor) = link.split_once('#')?;
            (!target.contains("://")).then_some((target, anchor))
        })
        .collect()
}

/// `a/b/../c` as `a/c`.
fn normal(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for part in path.components() {
        match part {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

#[test]
fn every_link_to_a_heading_in_the_docs_lands_on_one() {
    let read = |page: &Path| {
        std::fs::read_to_string(Path::new(ROOT).join(page))
            .unwrap_or_else(|e| panic!("read {}: {e}", page.display()))
    };
    let mut broken = Vec::new();
    let mut checked = 0;
    for page in pages() {
        let text = read(&page);
        for (n, line) in prose_lines(&text) {
            for (target, anchor) in anchored_links(line) {
                let target_page = if target.is_empty() {
                    page.clone()
                } else {
                    normal(&page.parent().unwrap_or(Path::new("")).join(target))
                };
                if target_page.extension().is_none_or(|e| e != "md") {
                    continue;
                }
                checked += 1;
                if !anchors(&read(&target_page)).contains(anchor) {
                    broken.push(format!("{}:{n}: {target}#{anchor}", page.display()));
                }
            }
        }
    }
    assert!(
        checked > 10,
        "only {checked} anchored links found: is the scan right?"
    );
    assert!(
        broken.is_empty(),
        "links to headings that do not exist:\n{}",
        broken.join("\n")
    );
}

#[test]
fn anchors_follow_githubs_rules() {
    let text = "# Strategy and budget: `matchmaker-lab bench`\n## Large pools: `bench --large`\n\
                ```\n# not a heading\n```\n## See [the guide](guide.md)\n## Twice\n## Twice\n";
    let found = anchors(text);
    for anchor in [
        "strategy-and-budget-matchmaker-lab-bench",
        "large-pools-bench---large",
        "see-the-guide",
        "twice",
        "twice-1",
    ] {
        assert!(found.contains(anchor), "{anchor} in {found:?}");
    }
    assert!(!found.contains("not-a-heading"), "{found:?}");
}
