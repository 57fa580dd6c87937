//! The top level of a file: the version header, `def`, `type`, `extern type`, an optional
//! bare expression (which becomes `@main`) and the metadata section.

use super::{PResult, Parser};
use crate::diagnostics::Diagnostic;
use crate::ir::{Attrs, ConstructorDef, Function, GlobalFunction, TypeDef};
use crate::syntax::token::{TokenKind as K, TokenValue};

/// The only text format version there is.
const VERSION: &str = "0.0.5";

impl Parser<'_> {
    /// The whole file, recovering at the next definition after each syntax error.
    pub(super) fn parse_items(&mut self) {
        self.load_metadata();
        if self.at(K::HashBracket) && self.parse_version().is_err() {
            self.recover();
        }
        loop {
            let result = match self.kind() {
                K::Eof | K::Metadata => break,
                K::Def => self.parse_def(),
                K::Type | K::Extern => self.parse_type_def(),
                K::HashBracket => {
                    let span = self.bump_span();
                    Err(self.error(span, "`#[version = \"0.0.5\"]` must come before any definition"))
                }
                _ => self.parse_main(),
            };
            if result.is_err() {
                self.recover();
            }
        }
    }

    /// `#[version = "0.0.5"]`.
    fn parse_version(&mut self) -> PResult<()> {
        self.bump();
        let name = self.expect(K::Ident, "`version`")?;
        if self.tok(name).name() != "version" {
            let span = self.tok_span(name);
            let msg = format!("unsupported attribute `{}`", self.tok(name).name());
            return Err(self.error(span, msg));
        }
        self.expect(K::Eq, "`=`")?;
        let value = self.expect(K::Str, "a version string")?;
        self.expect(K::RBracket, "`]`")?;
        if let TokenValue::Str(v) = &self.tok(value).value {
            if &**v != VERSION {
                let msg = format!("unsupported text format version `{v}`; expected `{VERSION}`");
                let span = self.tok_span(value);
                self.report(Diagnostic::error(span, msg));
            }
        }
        Ok(())
    }

    /// `def @name[A](%x: T, attr=v) -> R { body }`.
    fn parse_def(&mut self) -> PResult<()> {
        self.bump();
        let name_tok = self.expect(K::Global, "a global name `@name` after `def`")?;
        let name = self.tok_sym(name_tok);
        let span = self.tok_span(name_tok);
        let func = self.parse_function().inspect_err(|_| {
            self.unresolved.failed.insert(name);
        })?;
        if let Err(first) = self.module.add_function(GlobalFunction { name, func, span }) {
            let msg = format!("duplicate definition of `@{}`", self.tok(name_tok).name());
            self.report(Diagnostic::error(span, msg).with_label(first, "first defined here"));
        }
        Ok(())
    }

    /// `type Name[A] { C1(T, ...), C2, }` or `extern type Name[A]`.
    fn parse_type_def(&mut self) -> PResult<()> {
        let is_extern = self.eat(K::Extern);
        self.expect(K::Type, "`type` after `extern`")?;
        let name_tok = self.expect(K::Ident, "a type name")?;
        let name = self.tok_sym(name_tok);
        let span = self.tok_span(name_tok);
        let mark = self.type_params.mark();
        let mut ctors = Vec::new();
        let result = self.parse_type_def_body(is_extern, name, &mut ctors);
        self.type_params.restore(mark);
        let added = match result {
            Ok(type_params) => {
                let def = TypeDef { name, type_params, constructors: vec![], is_extern, span };
                Ok(self.add_type_def(def, &ctors))
            }
            Err(abort) => Err(abort),
        };
        if !matches!(added, Ok(true)) {
            // Uses of a type or constructor that could not be defined are not errors again.
            self.unresolved.failed.insert(name);
            self.unresolved.failed.extend(ctors.iter().map(|c| c.name));
        }
        added.map(|_| ())
    }

    /// Type parameters and constructors (collected into `ctors` even on failure).
    fn parse_type_def_body(
        &mut self,
        is_extern: bool,
        adt: crate::ir::Symbol,
        ctors: &mut Vec<ConstructorDef>,
    ) -> PResult<Vec<crate::ir::TypeParamId>> {
        let type_params = if self.at(K::LBracket) { self.parse_type_params()? } else { vec![] };
        if is_extern {
            if self.at(K::LBrace) {
                let span = self.tok_span(self.pos);
                return Err(self.error(span, "an `extern type` cannot have constructors"));
            }
            return Ok(type_params);
        }
        self.expect(K::LBrace, "`{` and the constructors")?;
        while !self.eat(K::RBrace) {
            let c = self.expect(K::Ident, "a constructor name")?;
            let name = self.tok_sym(c);
            let span = self.tok_span(c);
            let tag = ctors.len() as u32;
            // Recorded before the fields so that a failure in them still marks the name.
            ctors.push(ConstructorDef { name, adt, fields: vec![], tag, span });
            if self.at(K::LParen) {
                let fields = self.parse_type_list(K::RParen)?;
                if let Some(last) = ctors.last_mut() {
                    last.fields = fields;
                }
            }
            if !self.eat(K::Comma) {
                self.expect(K::RBrace, "`,` or `}`")?;
                break;
            }
        }
        Ok(type_params)
    }

    /// Adds an ADT unless its name or a constructor's is taken; reports each clash.
    fn add_type_def(&mut self, mut def: TypeDef, ctors: &[ConstructorDef]) -> bool {
        let mut ok = true;
        if let Some(prev) = self.module.type_def(def.name) {
            let first = prev.span;
            let msg = format!("duplicate type `{}`", self.module.name(def.name));
            self.report(Diagnostic::error(def.span, msg).with_label(first, "first defined here"));
            ok = false;
        }
        for (k, c) in ctors.iter().enumerate() {
            let first = match self.module.constructor(c.name) {
                Some(prev) => Some(prev.span),
                None => ctors[..k].iter().find(|p| p.name == c.name).map(|p| p.span),
            };
            if let Some(first) = first {
                let msg = format!("duplicate constructor `{}`", self.module.name(c.name));
                self.report(Diagnostic::error(c.span, msg).with_label(first, "first defined here"));
                ok = false;
            }
        }
        if ok {
            def.constructors = ctors.iter().map(|c| c.name).collect();
            // Both kinds of clash were checked above, so this cannot fail.
            let _ = self.module.add_type_def(def, ctors.to_vec());
        }
        ok
    }

    /// A bare expression after the definitions: `def @main(<free vars>) { expr }`, as TVM's
    /// `IRModule::FromExpr` makes it.
    fn parse_main(&mut self) -> PResult<()> {
        let first = self.tok_span(self.pos);
        self.free_vars = Some(Vec::new());
        self.graph.push(Default::default());
        let body = self.parse_expr();
        self.graph.pop();
        let params = self.free_vars.take().unwrap_or_default();
        let body = body?;
        if !matches!(self.kind(), K::Eof | K::Metadata) {
            return Err(self.unexpected("the end of the file after the top-level expression"));
        }
        // The function has no name token; its first token stands in.
        let span = first;
        let name = self.sym("main");
        let func = Function { type_params: vec![], params, ret_type: None, body, attrs: Attrs::default() };
        if let Err(first) = self.module.add_function(GlobalFunction { name, func, span }) {
            let msg = "the top-level expression becomes `@main`, which is already defined";
            self.report(Diagnostic::error(span, msg).with_label(first, "`@main` defined here"));
        }
        Ok(())
    }
}
