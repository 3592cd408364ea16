//! Module graphs, drawn from the `crate::` paths of library code: no crate of the
//! workspace has an import loop, and the runtime's picture in `CONTRIBUTING.md` is its
//! graph as it is.
//!
//! A top-level module of a crate's `src` (a file `x.rs` or a folder `x/`) depends on
//! another when one of its non-test files names `crate::other` outside a comment. The
//! crate roots (`lib.rs`, `main.rs`), the binaries under `src/bin` (crates of their own,
//! whose modules are drawn as a crate each), test files (`tests.rs`, `test_support.rs`)
//! and doctest setups are left out: they are not the library. Every member of the
//! workspace's `members` list is drawn, so a new crate is checked without editing this
//! file. `UPDATE_MODULE_GRAPH=1` rewrites the picture.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

type Graph = BTreeMap<String, BTreeSet<String>>;

const BEGIN: &str = "<!-- module graph: begin -->";
const END: &str = "<!-- module graph: end -->";
/// The crate roots, test files and doctest setups: not the library.
const NOT_LIBRARY: [&str; 5] = [
    "lib.rs",
    "main.rs",
    "tests.rs",
    "test_support.rs",
    "doctest_setup.rs",
];

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// Every `.rs` file under `dir`, with the top-level module it belongs to.
fn library_files(src: &Path) -> Vec<(String, PathBuf)> {
    let mut files = Vec::new();
    let mut stack = vec![src.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in fs::read_dir(&dir).expect("read src") {
            let path = entry.expect("dir entry").path();
            if path.is_dir() {
                if path != src.join("bin") {
                    stack.push(path);
                }
                continue;
            }
            let name = path.file_name().and_then(|n| n.to_str());
            let name = name.unwrap_or_default();
            if !name.ends_with(".rs") || NOT_LIBRARY.contains(&name) {
                continue;
            }
            let relative = path.strip_prefix(src).expect("under src");
            let first = relative.components().next().expect("a component");
            let module = first.as_os_str().to_string_lossy();
            let module = module.trim_end_matches(".rs").to_owned();
            files.push((module, path));
        }
    }
    files
}

/// The modules a line of code names through `crate::x` or `crate::{x, y::z}`.
fn named_modules(line: &str, modules: &BTreeSet<String>) -> Vec<String> {
    let mut named = Vec::new();
    for (at, _) in line.match_indices("crate::") {
        if line[..at].ends_with(|c: char| c.is_alphanumeric() || c == '_') {
            continue;
        }
        let rest = &line[at + "crate::".len()..];
        let group = rest.strip_prefix('{').map(|group| group.split('}').next());
        let names: Vec<&str> = match group {
            Some(group) => group.unwrap_or_default().split(',').collect(),
            None => vec![rest],
        };
        for name in names {
            let ident = name.trim().chars();
            let ident: String = ident
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            if modules.contains(&ident) {
                named.push(ident);
            }
        }
    }
    named
}

/// The graph of the crate whose top-level modules sit in `src`.
fn module_graph(src: &Path) -> Graph {
    let files = library_files(src);
    let modules: BTreeSet<String> = files.iter().map(|(module, _)| module.clone()).collect();
    let mut graph: Graph = modules
        .iter()
        .map(|m| (m.clone(), BTreeSet::new()))
        .collect();
    for (module, path) in &files {
        let text = fs::read_to_string(path).expect("read a source file");
        for line in text.lines().filter(|l| !l.trim_start().starts_with("//")) {
            for named in named_modules(line, &modules) {
                if &named != module {
                    graph.get_mut(module).expect("a module").insert(named);
                }
            }
        }
    }
    graph
}

/// The source folders of the workspace's crates: each member's `src`, and each
/// binary under `src/bin` that is a folder of modules.
fn crate_sources() -> Vec<PathBuf> {
    let manifest = fs::read_to_string(workspace().join("Cargo.toml")).expect("read Cargo.toml");
    let members = manifest
        .lines()
        .find_map(|line| line.trim().strip_prefix("members = ["))
        .expect("a members = [...] line in the workspace's Cargo.toml");
    let mut sources = Vec::new();
    for member in members.trim_end_matches(']').split(',') {
        let src = workspace()
            .join(member.trim().trim_matches('"'))
            .join("src");
        let Ok(bins) = fs::read_dir(src.join("bin")) else {
            sources.push(src);
            continue;
        };
        for bin in bins {
            let path = bin.expect("dir entry").path();
            if path.is_dir() {
                sources.push(path);
            }
        }
        sources.push(src);
    }
    sources
}

/// The strongly connected components of more than one module (Tarjan).
fn loops(graph: &Graph) -> Vec<Vec<String>> {
    struct Walk<'g> {
        graph: &'g Graph,
        index: BTreeMap<&'g str, usize>,
        low: BTreeMap<&'g str, usize>,
        stack: Vec<&'g str>,
        loops: Vec<Vec<String>>,
    }
    impl<'g> Walk<'g> {
        fn visit(&mut self, v: &'g str) {
            let i = self.index.len();
            self.index.insert(v, i);
            self.low.insert(v, i);
            self.stack.push(v);
            for w in &self.graph[v] {
                let w = w.as_str();
                if !self.index.contains_key(w) {
                    self.visit(w);
                    let low = self.low[v].min(self.low[w]);
                    self.low.insert(v, low);
                } else if self.stack.contains(&w) {
                    let low = self.low[v].min(self.index[w]);
                    self.low.insert(v, low);
                }
            }
            if self.low[v] == self.index[v] {
                let mut component = Vec::new();
                while let Some(w) = self.stack.pop() {
                    component.push(w.to_owned());
                    if w == v {
                        break;
                    }
                }
                if component.len() > 1 {
                    self.loops.push(component);
                }
            }
        }
    }
    let mut walk = Walk {
        graph,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        loops: Vec::new(),
    };
    for v in graph.keys() {
        if !walk.index.contains_key(v.as_str()) {
            walk.visit(v);
        }
    }
    walk.loops
}

/// The graph as a Mermaid flowchart, which GitHub renders.
fn picture(graph: &Graph) -> String {
    let mut out = format!("{BEGIN}\n```mermaid\nflowchart TD\n");
    for (from, tos) in graph {
        if tos.is_empty() {
            out.push_str(&format!("    {from}\n"));
        }
        for to in tos {
            out.push_str(&format!("    {from} --> {to}\n"));
        }
    }
    out.push_str(&format!("```\n{END}"));
    out
}

fn runtime_graph() -> Graph {
    module_graph(&workspace().join("diesel-occ/src"))
}

#[test]
fn the_runtime_modules_import_each_other_without_a_loop() {
    let graph = runtime_graph();
    assert!(graph.len() > 10, "too few modules found: {graph:?}");
    let found = loops(&graph);
    assert!(found.is_empty(), "import loops {found:?} in {graph:#?}");
}

#[test]
fn no_crate_of_the_workspace_has_an_import_loop() {
    let sources = crate_sources();
    assert!(sources.len() >= 7, "too few crates found: {sources:?}");
    let looped: Vec<(PathBuf, Vec<Vec<String>>)> = sources
        .into_iter()
        .map(|src| (loops(&module_graph(&src)), src))
        .filter_map(|(found, src)| (!found.is_empty()).then_some((src, found)))
        .collect();
    assert!(looped.is_empty(), "import loops: {looped:#?}");
}

#[test]
fn the_module_graph_picture_is_the_graph_as_it_is() {
    let path = workspace().join("CONTRIBUTING.md");
    let text = fs::read_to_string(&path).expect("read CONTRIBUTING.md");
    let (Some(begin), Some(end)) = (text.find(BEGIN), text.find(END)) else {
        panic!("CONTRIBUTING.md has no {BEGIN} ... {END} block");
    };
    let drawn = picture(&runtime_graph());
    let current = &text[begin..end + END.len()];
    if std::env::var_os("UPDATE_MODULE_GRAPH").is_some() {
        let updated = format!("{}{drawn}{}", &text[..begin], &text[end + END.len()..]);
        fs::write(&path, updated).expect("write CONTRIBUTING.md");
    } else {
        assert_eq!(current, drawn, "run with UPDATE_MODULE_GRAPH=1 to redraw");
    }
}

#[test]
fn a_loop_is_found() {
    let mut graph = Graph::new();
    let edge = |graph: &mut Graph, a: &str, b: &str| {
        graph.entry(a.into()).or_default().insert(b.into());
        graph.entry(b.into()).or_default();
    };
    edge(&mut graph, "error", "token");
    edge(&mut graph, "token", "statement");
    edge(&mut graph, "statement", "error");
    edge(&mut graph, "blocking", "error");
    let found = loops(&graph);
    assert_eq!(found.len(), 1, "{found:?}");
    let mut members = found[0].clone();
    members.sort();
    assert_eq!(members, ["error", "statement", "token"]);
    assert!(loops(&BTreeMap::from([("a".to_owned(), BTreeSet::new())])).is_empty());
}

#[test]
fn crate_paths_in_groups_and_after_other_text_are_read() {
    let modules: BTreeSet<String> = ["error", "token", "retry"].map(String::from).into();
    assert_eq!(
        named_modules("use crate::{error::Error, token::VersionToken};", &modules),
        ["error", "token"]
    );
    let named = named_modules("x: crate::retry::Attempt,", &modules);
    assert_eq!(named, ["retry"]);
    assert!(named_modules("use diesel_occ::retry;", &modules).is_empty());
    assert!(named_modules("use mycrate::error;", &modules).is_empty());
}

#[test]
fn a_loop_between_a_file_and_a_folder_of_a_crate_is_found() {
    let src = tempfile::tempdir().expect("a temporary src");
    let write = |path: &str, text: &str| {
        let path = src.path().join(path);
        fs::create_dir_all(path.parent().expect("a parent")).expect("create the folders");
        fs::write(path, text).expect("write a source file");
    };
    write("lib.rs", "mod etag;\nmod parse;\nuse crate::parse::tag;\n");
    let etag = "// crate::parse in a comment is no edge\npub struct ETag;\n";
    write("etag.rs", etag);
    write("parse/mod.rs", "mod grammar;\npub fn tag() {}\n");
    write("parse/grammar.rs", "use crate::etag::ETag;\n");
    assert!(loops(&module_graph(src.path())).is_empty());

    let etag = "pub struct ETag;\nfn check() { crate::parse::tag() }\n";
    write("etag.rs", etag);
    let found = loops(&module_graph(src.path()));
    assert_eq!(found.len(), 1, "{found:?}");
    let mut members = found[0].clone();
    members.sort();
    assert_eq!(members, ["etag", "parse"]);
}
