//! Little-endian byte encoding for the executable file format, with bounds-checked reads:
//! a truncated or corrupt file is an error, never a panic.

/// Why an executable could not be read.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum FormatError {
    /// The file ended in the middle of a value.
    #[error("truncated executable: needed {needed} more byte(s) at offset {offset}")]
    Truncated {
        /// Where the read started.
        offset: usize,
        /// How many bytes were missing.
        needed: usize,
    },
    /// A value is not one the format allows.
    #[error("corrupt executable: invalid {0}")]
    Invalid(String),
    /// Not an executable, or one of another format version.
    #[error("not a relay-vm executable ({0})")]
    BadHeader(String),
    /// The checksum does not match the contents.
    #[error("corrupt executable: checksum mismatch (stored {stored:#010x}, computed {computed:#010x})")]
    Checksum {
        /// The checksum in the file.
        stored: u32,
        /// The checksum of the contents read.
        computed: u32,
    },
}

/// Appends little-endian values to a buffer.
#[derive(Default)]
pub struct ByteWriter {
    /// The bytes written so far.
    pub buf: Vec<u8>,
}

impl ByteWriter {
    /// Appends a byte.
    pub fn u8(&mut self, v: u8) {
        self.buf.push(v);
    }
    /// Appends a `u32`.
    pub fn u32(&mut self, v: u32) {
        self.buf.extend_from_slice(&v.to_le_bytes());
    }
    /// Appends a `u64`.
    pub fn u64(&mut self, v: u64) {
        self.buf.extend_from_slice(&v.to_le_bytes());
    }
    /// Appends a length-prefixed UTF-8 string.
    pub fn str(&mut self, s: &str) {
        self.u32(s.len() as u32);
        self.buf.extend_from_slice(s.as_bytes());
    }
}

/// Reads little-endian values from a byte slice, failing cleanly past its end.
pub struct ByteReader<'a> {
    data: &'a [u8],
    pos: usize,
}

impl<'a> ByteReader<'a> {
    /// A reader at the start of `data`.
    pub fn new(data: &'a [u8]) -> ByteReader<'a> {
        ByteReader { data, pos: 0 }
    }

    /// Bytes not read yet.
    pub fn remaining(&self) -> usize {
        self.data.len() - self.pos
    }

    /// Whether every byte has been read.
    pub fn at_end(&self) -> bool {
        self.pos == self.data.len()
    }

    fn take(&mut self, n: usize) -> Result<&'a [u8], FormatError> {
        let end = self.pos.checked_add(n).filter(|&e| e <= self.data.len());
        match end {
            Some(end) => {
                let s = &self.data[self.pos..end];
                self.pos = end;
                Ok(s)
            }
            None => Err(FormatError::Truncated {
                offset: self.pos,
                needed: n - (self.data.len() - self.pos).min(n),
            }),
        }
    }

    /// Reads a byte.
    pub fn u8(&mut self) -> Result<u8, FormatError> {
        Ok(self.take(1)?[0])
    }
    /// Reads a `u32`.
    pub fn u32(&mut self) -> Result<u32, FormatError> {
        let b = self.take(4)?;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }
    /// Reads a `u64`.
    pub fn u64(&mut self) -> Result<u64, FormatError> {
        let b = self.take(8)?;
        let mut a = [0u8; 8];
        a.copy_from_slice(b);
        Ok(u64::from_le_bytes(a))
    }
    /// Reads a count of following items, refusing counts larger than the bytes left (each item
    /// takes at least one byte), so a corrupt count cannot make us allocate gigabytes.
    pub fn len_prefix(&mut self) -> Result<usize, FormatError> {
        let n = self.u32()? as usize;
        if n > self.data.len() - self.pos {
            return Err(FormatError::Invalid(format!(
                "length {n} exceeds the remaining {} bytes",
                self.data.len() - self.pos
            )));
        }
        Ok(n)
    }
    /// Reads a length-prefixed UTF-8 string.
    pub fn str(&mut self) -> Result<String, FormatError> {
        let n = self.len_prefix()?;
        let b = self.take(n)?;
        String::from_utf8(b.to_vec()).map_err(|_| FormatError::Invalid("UTF-8 in a string".into()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_truncation() {
        let mut w = ByteWriter::default();
        w.u8(7);
        w.u32(0xdead_beef);
        w.u64(u64::MAX - 1);
        w.str("héllo");
        let mut r = ByteReader::new(&w.buf);
        assert_eq!(r.u8(), Ok(7));
        assert_eq!(r.u32(), Ok(0xdead_beef));
        assert_eq!(r.u64(), Ok(u64::MAX - 1));
        assert_eq!(r.str().as_deref(), Ok("héllo"));
        assert!(r.at_end());
        let mut short = ByteReader::new(&w.buf[..3]);
        short.u8().unwrap();
        assert!(matches!(short.u32(), Err(FormatError::Truncated { .. })));
    }

    #[test]
    fn huge_lengths_are_rejected() {
        let mut w = ByteWriter::default();
        w.u32(u32::MAX);
        assert!(matches!(ByteReader::new(&w.buf).len_prefix(), Err(FormatError::Invalid(_))));
    }
}
