//! Stanford Sentiment Treebank trees (Socher et al., "Recursive Deep Models for Semantic
//! Compositionality Over a Sentiment Treebank", EMNLP 2013) and their conversion to the Relay
//! `Tree[int32]` values the Tree-LSTM example reads.
//!
//! A tree is one line of PTB brackets with a sentiment label (0 very negative .. 4 very
//! positive) on every node: `(3 (2 It) (4 (2 's) (4 great)))`. A leaf is `(label word)`, its
//! word being everything between the label's single space and the closing parenthesis (SST
//! writes parentheses inside words as `-LRB-`/`-RRB-`, and one of its tokens holds a
//! non-breaking space, so words are not split on whitespace).
//!
//! As a Relay value, a leaf is `Rose(word_id, Nil)` and an internal node `Rose(-1, children)`,
//! written in the value JSON of `relay-vm run --input` (`{"con": "Rose", "fields": [...]}`).

use relay::vm::Value;
use relay::{scalar, Error, Program};
use std::collections::HashMap;
use std::fmt::Write;

/// A malformed tree or vocabulary, located by line and column (both from 1; columns count
/// bytes).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("line {line}, column {column}: {message}")]
pub struct SstError {
    /// The line of the input text.
    pub line: usize,
    /// The byte column in that line.
    pub column: usize,
    /// What is wrong.
    pub message: String,
}

/// One node of a sentiment tree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Node {
    /// The sentiment label, 0 (very negative) to 4 (very positive) in SST.
    pub label: u8,
    /// The token of a leaf, exactly as written; `None` for an internal node.
    pub word: Option<String>,
    /// Indices of the children in [`Tree::nodes`], left to right; empty for a leaf.
    pub children: Vec<usize>,
}

/// A sentiment tree, as [`parse_tree`] builds it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tree {
    /// Never empty; children indices are in bounds (only the parser builds trees).
    nodes: Vec<Node>,
}

impl Tree {
    /// Every node in pre-order: the root first, a node's children after it.
    pub fn nodes(&self) -> &[Node] {
        &self.nodes
    }

    /// The root node.
    pub fn root(&self) -> &Node {
        &self.nodes[0]
    }

    /// The tree as a Relay `Tree[int32]` in value JSON: `{"con":"Rose","fields":[id,LIST]}`,
    /// where `id` is `word_id(word)` for a leaf and -1 for an internal node, and `LIST` is the
    /// children as a `Cons`/`Nil` chain (`{"con":"Nil","fields":[]}` for a leaf).
    ///
    /// Written with an explicit stack: no recursion over the tree.
    pub fn to_relay_json(&self, word_id: impl Fn(&str) -> i32) -> String {
        enum Task<'a> {
            Node(&'a Node),
            Text(&'static str),
        }
        let mut out = String::new();
        let mut stack = vec![Task::Node(self.root())];
        while let Some(task) = stack.pop() {
            let node = match task {
                Task::Text(text) => {
                    out.push_str(text);
                    continue;
                }
                Task::Node(node) => node,
            };
            let id = node.word.as_deref().map_or(-1, &word_id);
            let _ = write!(out, "{{\"con\":\"Rose\",\"fields\":[{id},");
            // Pushed in reverse so that they pop in order: each child opens a `Cons` cell,
            // and the cells all close after the final `Nil`.
            stack.push(Task::Text("]}"));
            for _ in &node.children {
                stack.push(Task::Text("]}"));
            }
            stack.push(Task::Text("{\"con\":\"Nil\",\"fields\":[]}"));
            for &child in node.children.iter().rev() {
                stack.push(Task::Text(","));
                stack.push(Task::Node(&self.nodes[child]));
                stack.push(Task::Text("{\"con\":\"Cons\",\"fields\":["));
            }
        }
        out
    }
    /// The tree as a Relay `Tree[int32]` value for `program` (any program: the prelude defines
    /// `Rose`, `Cons` and `Nil`), with the word ids and shape of [`Tree::to_relay_json`].
    ///
    /// Built bottom-up without recursion: in reverse pre-order every node comes after its
    /// subtrees, whose values are then on top of the stack, first child topmost.
    ///
    /// # Errors
    /// [`Error::Input`] when `program` lacks one of the three constructors.
    pub fn to_value(&self, program: &Program, word_id: impl Fn(&str) -> i32) -> Result<Value, Error> {
        let mut stack: Vec<Value> = Vec::new();
        for node in self.nodes.iter().rev() {
            let children = stack.split_off(stack.len().saturating_sub(node.children.len()));
            let mut list = program.constructor("Nil", vec![])?;
            for child in children {
                list = program.constructor("Cons", vec![child, list])?;
            }
            let id = node.word.as_deref().map_or(-1, &word_id);
            stack.push(program.constructor("Rose", vec![scalar(id), list])?);
        }
        // The root's value is the only one left.
        stack.pop().ok_or_else(|| Error::Input("empty tree".to_string()))
    }
}

/// Parses one PTB-bracketed tree (surrounding whitespace allowed). Errors say `line 1`.
///
/// # Errors
/// Anything but a single well-formed tree: unbalanced or misplaced parentheses, a label that
/// is not a number from 0 to 255, an empty word, text after the tree.
pub fn parse_tree(text: &str) -> Result<Tree, SstError> {
    let bytes = text.as_bytes();
    let error = |at: usize, message: &str| SstError { line: 1, column: at + 1, message: message.to_string() };
    let skip_spaces = |mut at: usize| {
        while bytes.get(at).is_some_and(u8::is_ascii_whitespace) {
            at += 1;
        }
        at
    };
    let mut nodes: Vec<Node> = Vec::new();
    // The open nodes, innermost last.
    let mut open: Vec<usize> = Vec::new();
    let mut at = skip_spaces(0);
    loop {
        match bytes.get(at) {
            Some(b'(') => {
                let label_end = at + 1 + bytes[at + 1..].iter().take_while(|b| b.is_ascii_digit()).count();
                let label = text[at + 1..label_end]
                    .parse::<u8>()
                    .map_err(|_| error(at + 1, "expected a label (0-255)"))?;
                if bytes.get(label_end) != Some(&b' ') {
                    return Err(error(label_end, "expected a space after the label"));
                }
                let index = nodes.len();
                if let Some(&parent) = open.last() {
                    nodes[parent].children.push(index);
                }
                nodes.push(Node { label, word: None, children: Vec::new() });
                open.push(index);
                at = label_end + 1;
                if bytes.get(at) != Some(&b'(') {
                    let word_len = bytes[at..].iter().take_while(|&&b| b != b'(' && b != b')').count();
                    if word_len == 0 || bytes.get(at + word_len) != Some(&b')') {
                        return Err(error(at, "expected a word and `)`, or a subtree"));
                    }
                    nodes[index].word = Some(text[at..at + word_len].to_string());
                    at += word_len;
                }
            }
            Some(b')') => {
                if open.pop().is_none() {
                    return Err(error(at, "unbalanced `)`"));
                }
                at += 1;
                if open.is_empty() {
                    at = skip_spaces(at);
                    return match bytes.get(at) {
                        None => Ok(Tree { nodes }),
                        Some(_) => Err(error(at, "text after the tree")),
                    };
                }
            }
            Some(b' ') if !open.is_empty() => at += 1,
            Some(_) => return Err(error(at, "expected `(`")),
            None if nodes.is_empty() => return Err(error(at, "expected a tree")),
            None => return Err(error(at, "unclosed `(`")),
        }
    }
}

/// Parses a file of trees, one a line; blank lines are skipped.
///
/// # Errors
/// The first malformed tree, with its line number.
pub fn parse_trees(text: &str) -> Result<Vec<Tree>, SstError> {
    text.lines()
        .enumerate()
        .filter(|(_, line)| !line.trim().is_empty())
        .map(|(i, line)| parse_tree(line).map_err(|e| SstError { line: i + 1, ..e }))
        .collect()
}

/// A word vocabulary: the word on line `i` (from 0) of a vocabulary file has id `i`, and
/// line 0 is the unknown token, the id of every word not listed. Words are looked up
/// lowercased (the Tree-LSTM example's vocabulary is lowercase).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Vocab {
    ids: HashMap<String, i32>,
}

impl Vocab {
    /// Reads a vocabulary file: one word a line, UTF-8, the unknown token first.
    ///
    /// # Errors
    /// An empty file, an empty line, a word listed twice, or more than `i32::MAX` words.
    pub fn parse(text: &str) -> Result<Vocab, SstError> {
        let mut ids = HashMap::new();
        for (i, word) in text.lines().enumerate() {
            let error = |message: &str| SstError { line: i + 1, column: 1, message: message.to_string() };
            let id = i32::try_from(i).map_err(|_| error("too many words"))?;
            if word.is_empty() {
                return Err(error("empty line"));
            }
            if ids.insert(word.to_string(), id).is_some() {
                return Err(error(&format!("`{word}` is listed twice")));
            }
        }
        if ids.is_empty() {
            return Err(SstError { line: 1, column: 1, message: "empty vocabulary".to_string() });
        }
        Ok(Vocab { ids })
    }

    /// The number of words, the unknown token included.
    pub fn len(&self) -> usize {
        self.ids.len()
    }

    /// Always false: a vocabulary holds at least the unknown token.
    pub fn is_empty(&self) -> bool {
        self.ids.is_empty()
    }

    /// The id of `word`, lowercased; 0 (the unknown token) when it is not listed.
    pub fn id(&self, word: &str) -> i32 {
        self.ids.get(&word.to_lowercase()).copied().unwrap_or(0)
    }
}

/// One line of the Tree-LSTM example's `--input` file for `tree`:
/// `{"args":[TREE],"label":L}`, `TREE` as [`Tree::to_relay_json`] with `vocab`'s ids and `L`
/// the root's label. No newline.
pub fn jsonl_line(tree: &Tree, vocab: &Vocab) -> String {
    format!("{{\"args\":[{}],\"label\":{}}}", tree.to_relay_json(|w| vocab.id(w)), tree.root().label)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn leaf(label: u8, word: &str) -> Node {
        Node { label, word: Some(word.to_string()), children: vec![] }
    }

    #[test]
    fn parses_nested_trees_in_pre_order() {
        let t = parse_tree(" (3 (2 It) (4 (2 's) (4 great)))\n").unwrap();
        assert_eq!(
            t.nodes(),
            [
                Node { label: 3, word: None, children: vec![1, 2] },
                leaf(2, "It"),
                Node { label: 4, word: None, children: vec![3, 4] },
                leaf(2, "'s"),
                leaf(4, "great"),
            ]
        );
        assert_eq!(parse_tree("(1 good)").unwrap().nodes(), [leaf(1, "good")]);
    }

    #[test]
    fn words_keep_inner_spaces_and_escapes() {
        let t = parse_tree("(2 (2 8\u{a0}1\\/2) (2 -LRB-))").unwrap();
        assert_eq!(t.nodes()[1].word.as_deref(), Some("8\u{a0}1\\/2"));
        assert_eq!(t.nodes()[2].word.as_deref(), Some("-LRB-"));
    }

    #[test]
    fn malformed_trees_are_located() {
        let cases = [
            ("", 1, "expected a tree"),
            ("(2 a", 4, "expected a word"),
            ("(2 (1 a)", 9, "unclosed"),
            ("(2 a))", 6, "text after"),
            ("(2 a) (3 b)", 7, "text after"),
            ("(x a)", 2, "label"),
            ("(300 a)", 2, "label"),
            ("(2a)", 3, "space after the label"),
            ("(2 )", 4, "expected a word"),
            ("(2 (1 a)b)", 9, "expected `(`"),
            ("x", 1, "expected `(`"),
        ];
        for (text, column, message) in cases {
            let e = parse_tree(text).unwrap_err();
            assert_eq!(e.column, column, "{text}: {e}");
            assert!(e.message.contains(message), "{text}: {e}");
        }
        let e = parse_trees("(1 a)\n\n(2 b\n").unwrap_err();
        assert_eq!((e.line, e.column), (3, 4));
    }

    #[test]
    fn vocabulary_ids_are_line_numbers_and_lowercase() {
        let v = Vocab::parse("<unk>\nthe\ngreat\n").unwrap();
        assert_eq!((v.len(), v.id("the"), v.id("Great"), v.id("film")), (3, 1, 2, 0));
        assert_eq!(Vocab::parse("<unk>\na\na\n").unwrap_err().line, 3);
        assert_eq!(Vocab::parse("<unk>\n\nb\n").unwrap_err().line, 2);
        assert!(Vocab::parse("").is_err());
    }

    #[test]
    fn relay_json_is_rose_and_cons_cells() {
        let v = Vocab::parse("<unk>\nit\ngreat\n").unwrap();
        let t = parse_tree("(3 (2 It) (4 (2 's) (4 great)))").unwrap();
        let nil = r#"{"con":"Nil","fields":[]}"#;
        let rose = |id: i32, list: &str| format!(r#"{{"con":"Rose","fields":[{id},{list}]}}"#);
        let cons = |x: &str, xs: &str| format!(r#"{{"con":"Cons","fields":[{x},{xs}]}}"#);
        let inner = rose(-1, &cons(&rose(0, nil), &cons(&rose(2, nil), nil)));
        let expected = rose(-1, &cons(&rose(1, nil), &cons(&inner, nil)));
        assert_eq!(jsonl_line(&t, &v), format!(r#"{{"args":[{expected}],"label":3}}"#));
        let parsed: serde_json::Value = serde_json::from_str(&jsonl_line(&t, &v)).unwrap();
        assert_eq!(parsed["label"], 3);
    }
}
