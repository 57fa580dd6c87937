//! Source files and byte spans; the bridge to `codespan-reporting` for diagnostics.

use codespan_reporting::files::{self, Files};
use std::ops::Range;

/// A source file in a [`SourceMap`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct FileId(pub u32);

/// A byte range `lo..hi` of one source file.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub struct Span {
    /// The file the range is in.
    pub file: FileId,
    /// First byte.
    pub lo: u32,
    /// One past the last byte.
    pub hi: u32,
}

impl Span {
    /// A span of `lo..hi` in `file`.
    pub fn new(file: FileId, lo: u32, hi: u32) -> Span {
        Span { file, lo, hi }
    }

    /// The smallest span covering both (same file assumed).
    pub fn to(self, other: Span) -> Span {
        Span { file: self.file, lo: self.lo.min(other.lo), hi: self.hi.max(other.hi) }
    }
}

/// One source text with its precomputed line starts.
#[derive(Debug, Clone)]
pub struct SourceFile {
    /// The name shown in diagnostics (usually the path).
    pub name: String,
    /// The full text.
    pub text: String,
    line_starts: Vec<usize>,
}

/// Every source file a module was built from (the prelude is one of them).
#[derive(Debug, Clone, Default)]
pub struct SourceMap {
    files: Vec<SourceFile>,
}

impl SourceMap {
    /// Adds a file and returns its id.
    pub fn add(&mut self, name: impl Into<String>, text: impl Into<String>) -> FileId {
        let text = text.into();
        let line_starts = files::line_starts(&text).collect();
        self.files.push(SourceFile { name: name.into(), text, line_starts });
        FileId(self.files.len() as u32 - 1)
    }

    /// The file with this id.
    pub fn file(&self, id: FileId) -> &SourceFile {
        &self.files[id.0 as usize]
    }

    /// Where `span` starts, as `file:line:col`; `None` for a span of no file here (one a
    /// pass made up).
    pub fn location(&self, span: Span) -> Option<String> {
        let f = self.files.get(span.file.0 as usize)?;
        let (line, col) = self.line_col(span.file, span.lo);
        Some(format!("{}:{line}:{col}", f.name))
    }

    /// 1-based line and column (in characters) of a byte offset.
    pub fn line_col(&self, file: FileId, offset: u32) -> (usize, usize) {
        let f = self.file(file);
        let offset = (offset as usize).min(f.text.len());
        let line = f.line_starts.partition_point(|&s| s <= offset) - 1;
        let start = f.line_starts[line];
        let col = f.text.get(start..offset).map_or(offset - start, |s| s.chars().count());
        (line + 1, col + 1)
    }
}

impl<'a> Files<'a> for SourceMap {
    type FileId = FileId;
    type Name = &'a str;
    type Source = &'a str;

    fn name(&'a self, id: FileId) -> Result<&'a str, files::Error> {
        self.files.get(id.0 as usize).map(|f| f.name.as_str()).ok_or(files::Error::FileMissing)
    }

    fn source(&'a self, id: FileId) -> Result<&'a str, files::Error> {
        self.files.get(id.0 as usize).map(|f| f.text.as_str()).ok_or(files::Error::FileMissing)
    }

    fn line_index(&'a self, id: FileId, byte_index: usize) -> Result<usize, files::Error> {
        let f = self.files.get(id.0 as usize).ok_or(files::Error::FileMissing)?;
        Ok(f.line_starts.partition_point(|&s| s <= byte_index).saturating_sub(1))
    }

    fn line_range(&'a self, id: FileId, line_index: usize) -> Result<Range<usize>, files::Error> {
        let f = self.files.get(id.0 as usize).ok_or(files::Error::FileMissing)?;
        let start = *f
            .line_starts
            .get(line_index)
            .ok_or(files::Error::LineTooLarge { given: line_index, max: f.line_starts.len() - 1 })?;
        let end = f.line_starts.get(line_index + 1).copied().unwrap_or(f.text.len());
        Ok(start..end)
    }
}
