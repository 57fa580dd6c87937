//! Line wrapping for `relay-vm fmt`: a line of printed text longer than [`LINE_WIDTH`] is
//! broken at its longest outermost bracket group, one element per line, as rustfmt breaks a
//! call that does not fit:
//!
//! ```text
//! %3 = nn.conv2d(
//!   %2,
//!   %conv1.weight,
//!   padding=[3, 3, 3, 3],
//!   channels=64,
//!   kernel_size=[7, 7]
//! );
//! ```
//!
//! Each new line that is still too long is broken the same way. Relay text ignores line
//! breaks between tokens, so the wrapped text parses to the same module, and because the
//! printer always produces the same unwrapped lines, formatting stays idempotent. Wrapping
//! is a pass over the printed text rather than a layout algebra in the printer because only
//! bracket groups ever break: the scanner needs to know strings and comments (never broken
//! inside) and nothing else. The `#[metadata]` section is left as it is.

/// The project's line width (`rustfmt.toml`'s `max_width`), which `relay-vm fmt` wraps at.
pub const LINE_WIDTH: usize = 110;

/// Indentation added for the elements of a broken group (the printer's indent unit).
const INDENT: &str = "  ";

/// `text` with every line longer than `width` (outside the `#[metadata]` section) broken at
/// bracket groups; lines without a breakable group stay long.
pub fn wrap(text: &str, width: usize) -> String {
    let mut out = String::with_capacity(text.len() + text.len() / 8);
    let mut comment_depth = 0usize;
    let mut lines = text.split_inclusive('\n');
    for line in lines.by_ref() {
        if line.starts_with("#[metadata]") {
            out.push_str(line);
            break;
        }
        let (body, newline) = match line.strip_suffix('\n') {
            Some(body) => (body, "\n"),
            None => (line, ""),
        };
        let starts_in_comment = comment_depth > 0;
        let found = scan(body, &mut comment_depth);
        if starts_in_comment || body.chars().count() <= width {
            out.push_str(body);
        } else {
            wrap_line(body, found, width, &mut out);
        }
        out.push_str(newline);
    }
    out.extend(lines);
    out
}

/// Byte offsets of one line's outermost bracket groups (`(`/`[` to the matching `)`/`]`),
/// with the offsets of their top-level commas, found outside strings and comments.
#[derive(Default)]
struct Scan {
    groups: Vec<Group>,
}

struct Group {
    open: usize,
    close: usize,
    commas: Vec<usize>,
}

/// Scans `line` for its outermost complete bracket groups. `comment_depth` carries an open
/// (nesting) block comment from line to line; a group that is not closed on the line, or
/// one that a comment interrupts, is not breakable.
fn scan(line: &str, comment_depth: &mut usize) -> Scan {
    let bytes = line.as_bytes();
    let mut scan = Scan::default();
    let mut stack: Vec<(usize, Vec<usize>)> = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        let (c, next) = (bytes[i], bytes.get(i + 1).copied());
        if *comment_depth > 0 {
            match (c, next) {
                (b'/', Some(b'*')) => (*comment_depth += 1, i += 1),
                (b'*', Some(b'/')) => (*comment_depth -= 1, i += 1),
                _ => ((), ()),
            };
            i += 1;
            continue;
        }
        match (c, next) {
            (b'/', Some(b'/')) => break,
            (b'/', Some(b'*')) => {
                *comment_depth = 1;
                // A comment inside a group pins the group to one line.
                stack.clear();
                i += 1;
            }
            (b'"', _) => {
                i += 1;
                while i < bytes.len() && bytes[i] != b'"' {
                    i += if bytes[i] == b'\\' { 2 } else { 1 };
                }
            }
            (b'(' | b'[', _) => stack.push((i, Vec::new())),
            (b')' | b']', _) => {
                if let Some((open, commas)) = stack.pop() {
                    if stack.is_empty() {
                        scan.groups.push(Group { open, close: i, commas });
                    }
                }
            }
            (b',', _) if stack.len() == 1 => {
                if let Some((_, commas)) = stack.last_mut() {
                    commas.push(i);
                }
            }
            _ => {}
        }
        i += 1;
    }
    scan
}

/// Breaks `line` at its longest non-empty outermost group and wraps the pieces again.
fn wrap_line(line: &str, found: Scan, width: usize, out: &mut String) {
    let Some(group) = found.groups.iter().filter(|g| g.close > g.open + 1).max_by_key(|g| g.close - g.open)
    else {
        out.push_str(line);
        return;
    };
    let indent = &line[..line.len() - line.trim_start().len()];
    let inner = format!("{indent}{INDENT}");
    let mut pieces = Vec::with_capacity(group.commas.len() + 3);
    pieces.push(line[..=group.open].to_string());
    let mut start = group.open + 1;
    for &comma in &group.commas {
        pieces.push(format!("{inner}{},", line[start..comma].trim()));
        start = comma + 1;
    }
    let last = line[start..group.close].trim();
    // A trailing comma (the one-element tuple `(%x,)`) stays on the element before it.
    if !last.is_empty() {
        pieces.push(format!("{inner}{last}"));
    }
    pieces.push(format!("{indent}{}", &line[group.close..]));
    for (i, piece) in pieces.iter().enumerate() {
        if i > 0 {
            out.push('\n');
        }
        let mut depth = 0;
        let piece_scan = scan(piece, &mut depth);
        // Terminates: every piece holds fewer bracket levels than `line` did.
        if piece.chars().count() > width {
            wrap_line(piece, piece_scan, width, out);
        } else {
            out.push_str(piece);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_lines_and_metadata_are_untouched() {
        let text = "def @f(%x) {\n  %x\n}\n#[metadata]\n{\"a\": [1, 2, 3, 4, 5, 6, 7, 8, 9]}";
        assert_eq!(
            wrap(text, 10),
            "def @f(\n  %x\n) {\n  %x\n}\n#[metadata]\n{\"a\": [1, 2, 3, 4, 5, 6, 7, 8, 9]}"
        );
    }

    #[test]
    fn breaks_the_longest_outermost_group_and_recurses() {
        let line = "  %3 = nn.conv2d(%2, %w, padding=[3, 3, 3, 3], channels=64) /* ty */;";
        let wrapped = wrap(line, 40);
        assert_eq!(
            wrapped,
            "  %3 = nn.conv2d(\n    %2,\n    %w,\n    padding=[3, 3, 3, 3],\n    channels=64\n  ) /* ty */;"
        );
        let nested = wrap("%0 = add(multiply(%aaaaaaaa, %bbbbbbbb), %c);", 40);
        assert_eq!(nested, "%0 = add(\n  multiply(%aaaaaaaa, %bbbbbbbb),\n  %c\n);");
        assert_eq!(wrap("%0 = add(multiply(%aaaaaaaa, %bbbbbbbb), %c);", 20).lines().count(), 7);
    }

    #[test]
    fn strings_comments_and_trailing_commas_are_respected() {
        assert_eq!(wrap("%0 = f(%x,); // a, (b", 8), "%0 = f(\n  %x,\n); // a, (b");
        assert_eq!(wrap("%0 = f(\"a, (b\", %y);", 8), "%0 = f(\n  \"a, (b\",\n  %y\n);");
        // A group holding a comment, or one that a comment spans, is not broken.
        assert_eq!(wrap("%0 = f(%x /* c */, %y);", 8), "%0 = f(%x /* c */, %y);");
        assert_eq!(wrap("/* (a,\nb) */ %0 = g(%x, %y);", 8), "/* (a,\nb) */ %0 = g(%x, %y);");
        assert_eq!(wrap("%averyveryverylongname;", 8), "%averyveryverylongname;");
    }
}
