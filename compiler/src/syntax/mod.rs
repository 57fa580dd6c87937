//! Relay's text format (`#[version = "0.0.5"]`): lexer, parser with name resolution, printer.
