//! The layers hold: which directory of `src/` may import which, no import cycle between
//! the files of `src/`, the subcommands (`cli`) imported by the binaries only, the lab by
//! nothing of the product, and the optimizer crate free of tokio and sqlx.
//!
//! A plain text scan: comments and literals removed, then every `use` tree and every
//! path that starts at `crate`, `super`, `self`, `matchmaker`, a child module or a
//! module imported by name, resolved to the file that defines it (`crate::a::b` is
//! `src/a/b.rs`, `src/a/b/mod.rs`, else `src/a.rs`/`src/a/mod.rs`: the longest prefix
//! that is a file).

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

/// The product's directories: none of them may import the lab.
const PRODUCT: [&str; 6] = ["db", "config", "daemon", "ops", "cli", "report"];

/// (directory of `src/`, the directories it must not import).
const FORBIDDEN: [(&str, &[&str]); 4] = [
    ("db", &["config", "report", "daemon", "ops", "cli", "lab"]),
    ("config", &["db", "daemon", "ops", "cli", "lab"]),
    ("daemon", &["cli", "ops", "lab"]),
    ("ops", &["cli", "lab"]),
];

#[test]
fn each_layer_imports_only_the_layers_under_it() {
    let graph = Graph::of_src();
    let mut broken = Vec::new();
    for (file, imports) in &graph.edges {
        let Some(top) = graph.top_dir(file) else {
            continue;
        };
        for import in imports {
            let Some(target) = graph.top_dir(&import.target) else {
                continue;
            };
            let forbidden = FORBIDDEN
                .iter()
                .find(|(dir, _)| *dir == top)
                .is_some_and(|(_, no)| no.contains(&target));
            if forbidden {
                broken.push(format!(
                    "{file} (src/{top}/) imports {} ({}): src/{top}/ must not import src/{target}/",
                    import.path, import.target
                ));
            }
            if target == "lab" && PRODUCT.contains(&top) {
                broken.push(format!(
                    "{file} imports {} ({}): the product (src/{top}/) must not import the lab",
                    import.path, import.target
                ));
            }
        }
    }
    assert!(
        broken.is_empty(),
        "layer rules broken:\n{}",
        broken.join("\n")
    );
}

#[test]
fn only_the_binaries_import_the_subcommands() {
    let graph = Graph::of_src();
    let mut broken = Vec::new();
    for (file, imports) in &graph.edges {
        let binary = file == "src/main.rs" || file.starts_with("src/bin/");
        if binary || graph.top_dir(file) == Some("cli") {
            continue;
        }
        for import in imports {
            if graph.top_dir(&import.target) == Some("cli") {
                broken.push(format!(
                    "{file} imports {} ({}): only src/main.rs, src/bin/ and src/cli/ may import cli",
                    import.path, import.target
                ));
            }
        }
    }
    for file in rust_files(&Path::new(ROOT).join("tests")) {
        let rel = relative(&file);
        let text = std::fs::read_to_string(&file).expect("read a test file");
        let tokens = tokens(&strip(&text));
        for (path, _) in paths(&tokens) {
            if path.len() >= 2 && path[0] == "matchmaker" && path[1] == "cli" {
                broken.push(format!(
                    "{rel} imports {}: tests call the library, not the subcommands",
                    path.join("::")
                ));
            }
        }
    }
    assert!(broken.is_empty(), "cli imported:\n{}", broken.join("\n"));
}

/// A module's `pub use` of its own children (`db/mod.rs` re-exporting `commit_round`) is
/// its surface, declared like `pub mod`, not a dependency: it is not an edge here, so a
/// child may use what its `mod.rs` defines (`DbError`). Any other loop is a cycle.
#[test]
fn no_import_cycle_between_files() {
    let graph = Graph::of_src();
    let cycles = graph.cycles();
    assert!(
        cycles.is_empty(),
        "import cycles between files of src/ (each line: a file, the file it imports, ...):\n{}",
        cycles
            .iter()
            .map(|c| c.join(" -> "))
            .collect::<Vec<_>>()
            .join("\n")
    );
}

#[test]
fn the_optimizer_crate_needs_no_runtime_and_no_database() {
    let manifest = std::fs::read_to_string(Path::new(ROOT).join("optimizer/Cargo.toml"))
        .expect("read optimizer/Cargo.toml");
    let mut broken = Vec::new();
    let mut section = String::new();
    for line in manifest.lines() {
        let line = line.trim();
        if line.starts_with('[') {
            section = line.to_string();
            continue;
        }
        let key = line.split(['=', '.', ' ']).next().unwrap_or("");
        if section.contains("dependencies") && (key.starts_with("tokio") || key.starts_with("sqlx"))
        {
            broken.push(format!("optimizer/Cargo.toml {section} lists {key}"));
        }
    }
    for file in rust_files(&Path::new(ROOT).join("optimizer")) {
        let text = std::fs::read_to_string(&file).expect("read an optimizer file");
        for (path, _) in paths(&tokens(&strip(&text))) {
            if path[0] == "tokio" || path[0] == "sqlx" {
                broken.push(format!("{} uses {}", relative(&file), path.join("::")));
            }
        }
    }
    assert!(
        broken.is_empty(),
        "the optimizer crate must not depend on tokio or sqlx:\n{}",
        broken.join("\n")
    );
}

/// The scan finds what it should: a sample with every form of import it resolves.
#[test]
fn the_scan_resolves_each_form_of_import() {
    let text = r#"
        //! use crate::lab::Nothing;  (a comment: ignored)
        use super::{DbError, lease::Lease};
        use crate::config::{self, Config};
        use std::fmt;
        fn f() {
            let s = "crate::cli::run";  // a string: ignored
            config::check(crate::daemon::metrics::record());
            ::metrics::counter!("x");
        }
        #[cfg(test)]
        mod tests {
            use super::*;
        }
    "#;
    let tokens = tokens(&strip(text));
    let found: Vec<String> = paths(&tokens)
        .into_iter()
        .map(|(p, _)| p.join("::"))
        .collect();
    assert_eq!(
        found,
        [
            "super::DbError",
            "super::lease::Lease",
            "crate::config",
            "crate::config::Config",
            "std::fmt",
            "config::check",
            "crate::daemon::metrics::record",
            "super::*",
        ]
    );
}

/// One import of a file: the path as written (made absolute) and the file it resolves to.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct Import {
    path: String,
    target: String,
    /// A `pub use` of the module's own descendant: the module's surface, declared like
    /// `pub mod`, not a dependency of its code.
    reexport: bool,
}

/// The files of `src/` and what each imports.
struct Graph {
    /// Relative path (`src/db/commit.rs`) -> its imports of other files of `src/`.
    edges: BTreeMap<String, BTreeSet<Import>>,
}

impl Graph {
    fn of_src() -> Graph {
        let src = Path::new(ROOT).join("src");
        let files: Vec<String> = rust_files(&src).iter().map(|f| relative(f)).collect();
        let known: BTreeSet<String> = files.iter().cloned().collect();
        let mut edges = BTreeMap::new();
        for rel in &files {
            let text = std::fs::read_to_string(Path::new(ROOT).join(rel)).expect("read a file");
            let imports = imports_of(rel, &text, &known);
            edges.insert(rel.clone(), imports);
        }
        Graph { edges }
    }

    /// `db` for `src/db/commit.rs`; `None` for `src/lib.rs`, `src/main.rs`, `src/bin/`.
    fn top_dir<'a>(&self, file: &'a str) -> Option<&'a str> {
        let rest = file.strip_prefix("src/")?;
        let (dir, _) = rest.split_once('/')?;
        (dir != "bin").then_some(dir)
    }

    /// Every import cycle, one per strongly connected group of files (re-exports aside).
    fn cycles(&self) -> Vec<Vec<String>> {
        let next = |file: &str| -> Vec<&str> {
            self.edges
                .get(file)
                .map(|imports| {
                    imports
                        .iter()
                        .filter(|i| !i.reexport)
                        .map(|i| i.target.as_str())
                        .collect::<BTreeSet<_>>()
                        .into_iter()
                        .collect()
                })
                .unwrap_or_default()
        };
        let mut cycles = Vec::new();
        let mut reported: BTreeSet<String> = BTreeSet::new();
        for start in self.edges.keys() {
            if reported.contains(start) {
                continue;
            }
            // Shortest way back to `start`, breadth first.
            let mut came_from: HashMap<&str, &str> = HashMap::new();
            let mut frontier = vec![start.as_str()];
            let mut found = None;
            'search: while !frontier.is_empty() {
                let mut later = Vec::new();
                for file in frontier {
                    for target in next(file) {
                        if target == start {
                            found = Some(file);
                            break 'search;
                        }
                        if !came_from.contains_key(target) {
                            came_from.insert(target, file);
                            later.push(target);
                        }
                    }
                }
                frontier = later;
            }
            if let Some(last) = found {
                let mut cycle = vec![last.to_string()];
                let mut at = last;
                while at != start {
                    at = came_from[at];
                    cycle.push(at.to_string());
                }
                cycle.reverse();
                cycle.push(start.clone());
                reported.extend(cycle.iter().cloned());
                cycles.push(cycle);
            }
        }
        cycles
    }
}

/// The module path of a library file: `[]` for `src/lib.rs`, `[db]` for `src/db/mod.rs`,
/// `[db, commit]` for `src/db/commit.rs`; `None` for the binaries' files.
fn module_of(rel: &str) -> Option<Vec<String>> {
    let rest = rel.strip_prefix("src/")?;
    if rest == "main.rs" || rest.starts_with("bin/") {
        return None;
    }
    let rest = rest.strip_suffix(".rs")?;
    let mut parts: Vec<String> = rest.split('/').map(String::from).collect();
    if parts.last().is_some_and(|p| p == "mod" || p == "lib") {
        parts.pop();
    }
    Some(parts)
}

/// The file that defines module `m`, if it is a file of `src/`.
fn module_file(m: &[String], known: &BTreeSet<String>) -> Option<String> {
    if m.is_empty() {
        return Some("src/lib.rs".into());
    }
    let base = format!("src/{}", m.join("/"));
    [format!("{base}.rs"), format!("{base}/mod.rs")]
        .into_iter()
        .find(|f| known.contains(f))
}

/// The files `rel` imports (itself excluded).
fn imports_of(rel: &str, text: &str, known: &BTreeSet<String>) -> BTreeSet<Import> {
    let own = module_of(rel);
    let tokens = tokens(&strip(text));
    let found = paths(&tokens);
    // Modules imported by name (`use crate::config::{self, Config}`: `config`, `Config`).
    let mut aliases: HashMap<String, Vec<String>> = HashMap::new();
    for (path, at) in &found {
        if !at.in_use {
            continue;
        }
        let context = context_of(own.as_deref(), &at.inline);
        if let Some(absolute) = absolute(&context, path, own.is_none(), known, &HashMap::new())
            && let Some(last) = absolute.last()
            && last != "*"
        {
            let name = at.alias.clone().unwrap_or_else(|| last.clone());
            aliases.insert(name, absolute);
        }
    }
    let mut out = BTreeSet::new();
    for (path, at) in &found {
        let context = context_of(own.as_deref(), &at.inline);
        let Some(absolute) = absolute(&context, path, own.is_none(), known, &aliases) else {
            continue;
        };
        let target = (0..=absolute.len())
            .rev()
            .filter(|&k| !(k == 0 && own.is_none() && path[0] != "matchmaker"))
            .find_map(|k| module_file(&absolute[..k], known));
        let Some(target) = target else {
            continue;
        };
        if target == rel {
            continue;
        }
        let reexport = at.in_use
            && at.public
            && own.as_ref().is_some_and(|m| {
                absolute.len() > m.len() && absolute[..m.len()] == m[..] && at.inline.is_empty()
            });
        out.insert(Import {
            path: format!("crate::{}", absolute.join("::")),
            target,
            reexport,
        });
    }
    out
}

/// The module a path is written in: the file's, then its inline modules (`mod tests {}`).
fn context_of(own: Option<&[String]>, inline: &[String]) -> Vec<String> {
    let mut m: Vec<String> = own.map(<[String]>::to_vec).unwrap_or_default();
    m.extend(inline.iter().cloned());
    m
}

/// `path`, written in module `context`, as a path from the library's root; `None` for
/// another crate's.
fn absolute(
    context: &[String],
    path: &[String],
    binary: bool,
    known: &BTreeSet<String>,
    aliases: &HashMap<String, Vec<String>>,
) -> Option<Vec<String>> {
    let first = path.first()?.as_str();
    let rest = |from: usize| path[from..].to_vec();
    match first {
        "matchmaker" => Some(rest(1)),
        "crate" if !binary => Some(rest(1)),
        "self" if !binary => Some([context.to_vec(), rest(1)].concat()),
        "super" if !binary => {
            let ups = path.iter().take_while(|s| *s == "super").count();
            let kept = context.len().checked_sub(ups)?;
            Some([context[..kept].to_vec(), rest(ups)].concat())
        }
        _ if binary => None,
        _ => {
            let child = [context.to_vec(), vec![first.to_string()]].concat();
            if module_file(&child, known).is_some() {
                Some([context.to_vec(), path.to_vec()].concat())
            } else {
                aliases
                    .get(first)
                    .map(|base| [base.clone(), rest(1)].concat())
            }
        }
    }
}

/// Where a path was found.
#[derive(Debug, Clone, Default)]
struct Site {
    /// In a `use` item.
    in_use: bool,
    /// In a `pub use` (any visibility).
    public: bool,
    /// `use a::b as c`: `c`.
    alias: Option<String>,
    /// The inline modules around it (`mod tests { ... }`).
    inline: Vec<String>,
}

#[derive(Debug, Clone, PartialEq)]
enum Token {
    Ident(String),
    PathSep,
    Punct(char),
}

/// Every path of two or more segments (or a `use` tree's leaf), with where it was found.
fn paths(tokens: &[Token]) -> Vec<(Vec<String>, Site)> {
    let mut out = Vec::new();
    let mut depth = 0usize;
    // (name, depth inside its braces)
    let mut inline: Vec<(String, usize)> = Vec::new();
    let mut i = 0;
    while i < tokens.len() {
        match &tokens[i] {
            Token::Punct('{') => depth += 1,
            Token::Punct('}') => {
                if inline.last().is_some_and(|(_, d)| *d == depth) {
                    inline.pop();
                }
                depth = depth.saturating_sub(1);
            }
            Token::Ident(word) if word == "mod" => {
                if let (Some(Token::Ident(name)), Some(Token::Punct('{'))) =
                    (tokens.get(i + 1), tokens.get(i + 2))
                {
                    inline.push((name.clone(), depth + 1));
                }
            }
            Token::Ident(word) if word == "use" => {
                let public = i > 0
                    && (matches!(&tokens[i - 1], Token::Ident(w) if w == "pub")
                        || matches!(&tokens[i - 1], Token::Punct(')')));
                let site = Site {
                    in_use: true,
                    public,
                    alias: None,
                    inline: inline.iter().map(|(n, _)| n.clone()).collect(),
                };
                i = use_tree(tokens, i + 1, &[], &site, &mut out);
                continue;
            }
            Token::Ident(first) => {
                let after_sep = i > 0 && tokens[i - 1] == Token::PathSep;
                if !after_sep && tokens.get(i + 1) == Some(&Token::PathSep) {
                    let mut path = vec![first.clone()];
                    let mut j = i + 1;
                    while tokens.get(j) == Some(&Token::PathSep) {
                        match tokens.get(j + 1) {
                            Some(Token::Ident(next)) => path.push(next.clone()),
                            _ => break,
                        }
                        j += 2;
                    }
                    if path.len() >= 2 {
                        let site = Site {
                            inline: inline.iter().map(|(n, _)| n.clone()).collect(),
                            ..Site::default()
                        };
                        out.push((path, site));
                    }
                    i = j;
                    continue;
                }
            }
            _ => {}
        }
        i += 1;
    }
    out
}

/// Parses a `use` tree from `i` with the segments before it; returns the index after it.
fn use_tree(
    tokens: &[Token],
    mut i: usize,
    prefix: &[String],
    site: &Site,
    out: &mut Vec<(Vec<String>, Site)>,
) -> usize {
    if tokens.get(i) == Some(&Token::PathSep) {
        // `use ::extern_crate::...`: another crate.
        i += 1;
    }
    let mut path = prefix.to_vec();
    loop {
        match tokens.get(i) {
            Some(Token::Ident(seg)) => {
                if seg == "self" && !path.is_empty() {
                    // `{self, ...}`: the prefix itself.
                } else {
                    path.push(seg.clone());
                }
                i += 1;
                if tokens.get(i) == Some(&Token::PathSep) {
                    i += 1;
                    continue;
                }
                let mut leaf = site.clone();
                if matches!(tokens.get(i), Some(Token::Ident(w)) if w == "as")
                    && let Some(Token::Ident(alias)) = tokens.get(i + 1)
                {
                    leaf.alias = Some(alias.clone());
                    i += 2;
                }
                out.push((path, leaf));
                break;
            }
            Some(Token::Punct('*')) => {
                path.push("*".into());
                out.push((path, site.clone()));
                i += 1;
                break;
            }
            Some(Token::Punct('{')) => {
                i += 1;
                while i < tokens.len() && tokens[i] != Token::Punct('}') {
                    i = use_tree(tokens, i, &path, site, out);
                    if tokens.get(i) == Some(&Token::Punct(',')) {
                        i += 1;
                    }
                }
                i += 1;
                break;
            }
            _ => break,
        }
    }
    if prefix.is_empty() {
        // The end of the item.
        while i < tokens.len() && tokens[i] != Token::Punct(';') {
            i += 1;
        }
        i += 1;
    }
    i
}

/// Identifiers, `::` and single punctuation characters.
fn tokens(text: &str) -> Vec<Token> {
    let chars: Vec<char> = text.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c.is_alphabetic() || c == '_' {
            let start = i;
            while i < chars.len() && (chars[i].is_alphanumeric() || chars[i] == '_') {
                i += 1;
            }
            let word: String = chars[start..i].iter().collect();
            // `r#type`: the raw identifier's name.
            out.push(Token::Ident(word.trim_start_matches("r#").to_string()));
            continue;
        }
        if c == ':' && chars.get(i + 1) == Some(&':') {
            out.push(Token::PathSep);
            i += 2;
            continue;
        }
        if !c.is_whitespace() {
            out.push(Token::Punct(c));
        }
        i += 1;
    }
    out
}

/// The text without comments, string and character literals (each replaced by a space).
fn strip(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        if c == '/' && next == Some('/') {
            while i < chars.len() && chars[i] != '\n' {
                i += 1;
            }
            continue;
        }
        if c == '/' && next == Some('*') {
            let mut level = 0;
            while i < chars.len() {
                if chars[i] == '/' && chars.get(i + 1) == Some(&'*') {
                    level += 1;
                    i += 2;
                } else if chars[i] == '*' && chars.get(i + 1) == Some(&'/') {
                    level -= 1;
                    i += 2;
                    if level == 0 {
                        break;
                    }
                } else {
                    i += 1;
                }
            }
            out.push(' ');
            continue;
        }
        // Raw strings: r"..", r#".."#, br#".."#.
        let raw_start = match (c, next) {
            ('r', Some('"' | '#')) => Some(i + 1),
            ('b', Some('r')) if matches!(chars.get(i + 2), Some('"' | '#')) => Some(i + 2),
            _ => None,
        };
        let word_before = i > 0 && (chars[i - 1].is_alphanumeric() || chars[i - 1] == '_');
        if let Some(mut j) = raw_start.filter(|_| !word_before) {
            let mut hashes = 0;
            while chars.get(j) == Some(&'#') {
                hashes += 1;
                j += 1;
            }
            if chars.get(j) == Some(&'"') {
                j += 1;
                loop {
                    if j >= chars.len() {
                        break;
                    }
                    if chars[j] == '"' && (0..hashes).all(|h| chars.get(j + 1 + h) == Some(&'#')) {
                        j += 1 + hashes;
                        break;
                    }
                    j += 1;
                }
                i = j;
                out.push(' ');
                continue;
            }
        }
        if c == '"' {
            i += 1;
            while i < chars.len() && chars[i] != '"' {
                if chars[i] == '\\' {
                    i += 1;
                }
                i += 1;
            }
            i += 1;
            out.push(' ');
            continue;
        }
        if c == '\'' {
            // A character literal ('x', '\n', '\u{..}'); otherwise a lifetime.
            if next == Some('\\') {
                i += 2;
                while i < chars.len() && chars[i] != '\'' {
                    i += 1;
                }
                i += 1;
                out.push(' ');
                continue;
            }
            if chars.get(i + 2) == Some(&'\'') {
                i += 3;
                out.push(' ');
                continue;
            }
        }
        out.push(c);
        i += 1;
    }
    out
}

/// Every `.rs` file under `dir`, sorted.
fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut dirs = vec![dir.to_path_buf()];
    while let Some(d) = dirs.pop() {
        for entry in std::fs::read_dir(&d).expect("read a source directory") {
            let path = entry.expect("a directory entry").path();
            if path.is_dir() {
                if path.file_name().is_some_and(|n| n != "target") {
                    dirs.push(path);
                }
            } else if path.extension().is_some_and(|e| e == "rs") {
                out.push(path);
            }
        }
    }
    out.sort();
    out
}

/// `src/db/commit.rs` for `<root>/src/db/commit.rs`.
fn relative(path: &Path) -> String {
    path.strip_prefix(ROOT)
        .expect("under the crate root")
        .to_string_lossy()
        .replace('\\', "/")
}
