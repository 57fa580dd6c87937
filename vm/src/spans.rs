//! Where each instruction of a function comes from: the pc → source position table that a
//! [`Trap`](crate::Trap)'s call stack reads, stored run-length encoded.

use crate::bytes::{ByteReader, ByteWriter, FormatError};

/// A 1-based line and column in a Relay source file.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SourcePos {
    /// Line, from 1; 0 when unknown.
    pub line: u32,
    /// Column in characters, from 1.
    pub col: u32,
}

impl SourcePos {
    /// No known position.
    pub const UNKNOWN: SourcePos = SourcePos { line: 0, col: 0 };
}

/// The source position of every instruction of one function, in one file: sorted runs,
/// each giving the position of the instructions from its pc up to the next run's.
///
/// Codegen fills it from the Relay expression each instruction was emitted for; the
/// bytecode passes that insert or remove instructions rebuild it with
/// [`SpanTable::positions`] and [`SpanTable::from_positions`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SpanTable {
    /// The source file's name, as diagnostics show it; empty when there are no runs.
    pub file: String,
    /// `(first pc, position)`, pcs strictly increasing; the first run need not start at 0
    /// (earlier instructions have no position).
    pub runs: Vec<(u32, SourcePos)>,
}

impl SpanTable {
    /// The table of the instructions whose positions (in `file`) are `positions`, in order.
    pub fn from_positions(file: &str, positions: &[SourcePos]) -> SpanTable {
        let mut runs: Vec<(u32, SourcePos)> = Vec::new();
        for (pc, &pos) in positions.iter().enumerate() {
            if runs.last().is_none_or(|&(_, last)| last != pos) {
                runs.push((pc as u32, pos));
            }
        }
        if runs.iter().all(|(_, p)| p.line == 0) {
            return SpanTable::default();
        }
        SpanTable { file: file.to_string(), runs }
    }

    /// The position of each of the first `len` instructions.
    pub fn positions(&self, len: usize) -> Vec<SourcePos> {
        (0..len).map(|pc| self.at(pc)).collect()
    }

    /// The position of the instruction at `pc` ([`SourcePos::UNKNOWN`] if none).
    pub fn at(&self, pc: usize) -> SourcePos {
        let i = self.runs.partition_point(|&(start, _)| start as usize <= pc);
        i.checked_sub(1).map_or(SourcePos::UNKNOWN, |i| self.runs[i].1)
    }

    /// `file:line:col` of the instruction at `pc`, if known.
    pub fn location(&self, pc: usize) -> Option<String> {
        let pos = self.at(pc);
        (pos.line > 0).then(|| format!("{}:{}:{}", self.file, pos.line, pos.col))
    }

    pub(crate) fn write(&self, w: &mut ByteWriter) {
        w.str(&self.file);
        w.u32(self.runs.len() as u32);
        for &(pc, pos) in &self.runs {
            w.u32(pc);
            w.u32(pos.line);
            w.u32(pos.col);
        }
    }

    /// Reads a table written by [`SpanTable::write`].
    ///
    /// # Errors
    /// Truncation, or runs whose pcs do not increase.
    pub(crate) fn read(r: &mut ByteReader<'_>) -> Result<SpanTable, FormatError> {
        let file = r.str()?;
        let n = r.len_prefix()?;
        let runs = (0..n)
            .map(|_| Ok((r.u32()?, SourcePos { line: r.u32()?, col: r.u32()? })))
            .collect::<Result<Vec<_>, FormatError>>()?;
        if runs.windows(2).any(|w| w[0].0 >= w[1].0) {
            return Err(FormatError::Invalid("source position runs out of order".into()));
        }
        Ok(SpanTable { file, runs })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pos(line: u32, col: u32) -> SourcePos {
        SourcePos { line, col }
    }

    #[test]
    fn runs_compress_and_expand_back() {
        let positions = [pos(3, 5), pos(3, 5), pos(4, 1), SourcePos::UNKNOWN, pos(4, 1)];
        let table = SpanTable::from_positions("a.relay", &positions);
        assert_eq!(table.runs.len(), 4);
        assert_eq!(table.positions(positions.len()), positions);
        assert_eq!(table.location(1).as_deref(), Some("a.relay:3:5"));
        assert_eq!(table.location(3), None);
        assert_eq!(table.location(99).as_deref(), Some("a.relay:4:1"), "the last run goes on");
        assert_eq!(SpanTable::from_positions("a.relay", &[SourcePos::UNKNOWN]), SpanTable::default());
    }

    #[test]
    fn a_table_reads_back_and_disordered_runs_are_an_error() {
        let table = SpanTable::from_positions("a.relay", &[pos(1, 2), pos(7, 9)]);
        let mut w = ByteWriter::default();
        table.write(&mut w);
        assert_eq!(SpanTable::read(&mut ByteReader::new(&w.buf)), Ok(table.clone()));
        let swapped = SpanTable { runs: table.runs.iter().rev().copied().collect(), ..table };
        let mut w = ByteWriter::default();
        swapped.write(&mut w);
        assert!(SpanTable::read(&mut ByteReader::new(&w.buf)).is_err());
    }
}
