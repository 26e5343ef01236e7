//! A JSON reader that accepts `//` and `/* */` comments and trailing commas, and keeps the line
//! and column of every value and key, so configuration errors can say where they are.

/// A position in the text, both counted from 1. Columns count characters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Pos {
    /// 1-based line.
    pub line: usize,
    /// 1-based column, in characters.
    pub column: usize,
}

/// A value with the position where it starts.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Node {
    pub(crate) pos: Pos,
    pub(crate) value: Value,
}

/// A JSON value whose objects keep their keys, with positions, in document order.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Value {
    Null,
    Bool(bool),
    Number(serde_json::Number),
    String(String),
    Array(Vec<Node>),
    Object(Vec<Entry>),
}

/// One `key: value` pair of an object.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Entry {
    pub(crate) key: String,
    pub(crate) key_pos: Pos,
    pub(crate) node: Node,
}

/// A syntax error at a position.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct SyntaxError {
    pub(crate) pos: Pos,
    pub(crate) message: String,
}

impl Value {
    /// How an error message names the value's type.
    pub(crate) fn kind(&self) -> &'static str {
        match self {
            Value::Null => "null",
            Value::Bool(_) => "a boolean",
            Value::Number(_) => "a number",
            Value::String(_) => "a string",
            Value::Array(_) => "an array",
            Value::Object(_) => "an object",
        }
    }
}

/// Parses one JSON document, allowing comments and trailing commas.
pub(crate) fn parse(text: &str) -> Result<Node, SyntaxError> {
    let mut parser = Parser {
        text: text.strip_prefix('\u{feff}').unwrap_or(text),
        at: 0,
        line: 1,
        column: 1,
    };
    parser.skip_blank()?;
    let node = parser.value(0)?;
    parser.skip_blank()?;
    if parser.at < parser.text.len() {
        return Err(parser.error("unexpected text after the value"));
    }
    Ok(node)
}

/// Deeper nesting than this is refused rather than overflowing the stack.
const MAX_DEPTH: usize = 128;

struct Parser<'a> {
    text: &'a str,
    at: usize,
    line: usize,
    column: usize,
}

impl Parser<'_> {
    fn pos(&self) -> Pos {
        Pos {
            line: self.line,
            column: self.column,
        }
    }

    fn error(&self, message: impl Into<String>) -> SyntaxError {
        SyntaxError {
            pos: self.pos(),
            message: message.into(),
        }
    }

    fn peek(&self) -> Option<char> {
        self.text[self.at..].chars().next()
    }

    fn bump(&mut self) -> Option<char> {
        let c = self.peek()?;
        self.at += c.len_utf8();
        if c == '\n' {
            self.line += 1;
            self.column = 1;
        } else {
            self.column += 1;
        }
        Some(c)
    }

    /// Skips whitespace and comments.
    fn skip_blank(&mut self) -> Result<(), SyntaxError> {
        loop {
            match self.peek() {
                Some(' ' | '\t' | '\n' | '\r') => {
                    self.bump();
                }
                Some('/') => {
                    let start = self.pos();
                    let rest = &self.text[self.at..];
                    if rest.starts_with("//") {
                        while let Some(c) = self.bump() {
                            if c == '\n' {
                                break;
                            }
                        }
                    } else if rest.starts_with("/*") {
                        self.bump();
                        self.bump();
                        loop {
                            if self.text[self.at..].starts_with("*/") {
                                self.bump();
                                self.bump();
                                break;
                            }
                            if self.bump().is_none() {
                                return Err(SyntaxError {
                                    pos: start,
                                    message: "the comment is never closed (`*/`)".to_owned(),
                                });
                            }
                        }
                    } else {
                        return Err(self.error("expected a value, found `/`"));
                    }
                }
                _ => return Ok(()),
            }
        }
    }

    fn value(&mut self, depth: usize) -> Result<Node, SyntaxError> {
        if depth > MAX_DEPTH {
            return Err(self.error("the value is nested too deeply"));
        }
        let pos = self.pos();
        let value = match self.peek() {
            Some('{') => self.object(depth)?,
            Some('[') => self.array(depth)?,
            Some('"') => Value::String(self.string()?),
            Some('-' | '0'..='9') => self.number()?,
            Some(c) if c.is_ascii_alphabetic() => {
                let word: String = self.text[self.at..]
                    .chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                    .collect();
                let value = match word.as_str() {
                    "null" => Value::Null,
                    "true" => Value::Bool(true),
                    "false" => Value::Bool(false),
                    _ => return Err(self.error(format!("expected a value, found `{word}`"))),
                };
                for _ in 0..word.len() {
                    self.bump();
                }
                value
            }
            Some(c) => return Err(self.error(format!("expected a value, found `{c}`"))),
            None => return Err(self.error("expected a value, found the end of the file")),
        };
        Ok(Node { pos, value })
    }

    fn object(&mut self, depth: usize) -> Result<Value, SyntaxError> {
        self.bump();
        let mut entries = Vec::new();
        loop {
            self.skip_blank()?;
            match self.peek() {
                Some('}') => {
                    self.bump();
                    return Ok(Value::Object(entries));
                }
                Some('"') => {}
                _ => return Err(self.error("expected a quoted key or `}`")),
            }
            let key_pos = self.pos();
            let key = self.string()?;
            self.skip_blank()?;
            if self.peek() != Some(':') {
                return Err(self.error("expected `:` after the key"));
            }
            self.bump();
            self.skip_blank()?;
            let node = self.value(depth + 1)?;
            entries.push(Entry { key, key_pos, node });
            self.skip_blank()?;
            match self.peek() {
                Some(',') => {
                    self.bump();
                }
                Some('}') => {}
                _ => return Err(self.error("expected `,` or `}`")),
            }
        }
    }

    fn array(&mut self, depth: usize) -> Result<Value, SyntaxError> {
        self.bump();
        let mut items = Vec::new();
        loop {
            self.skip_blank()?;
            if self.peek() == Some(']') {
                self.bump();
                return Ok(Value::Array(items));
            }
            items.push(self.value(depth + 1)?);
            self.skip_blank()?;
            match self.peek() {
                Some(',') => {
                    self.bump();
                }
                Some(']') => {}
                _ => return Err(self.error("expected `,` or `]`")),
            }
        }
    }

    /// A string literal, decoded by serde_json once its end is found.
    fn string(&mut self) -> Result<String, SyntaxError> {
        let start = self.pos();
        let from = self.at;
        self.bump();
        loop {
            match self.bump() {
                Some('"') => break,
                Some('\\') => {
                    self.bump();
                }
                Some('\n') | None => {
                    return Err(SyntaxError {
                        pos: start,
                        message: "the string is never closed".to_owned(),
                    });
                }
                Some(_) => {}
            }
        }
        serde_json::from_str(&self.text[from..self.at]).map_err(|e| SyntaxError {
            pos: start,
            message: format!("invalid string: {e}"),
        })
    }

    fn number(&mut self) -> Result<Value, SyntaxError> {
        let start = self.pos();
        let from = self.at;
        while let Some(c) = self.peek() {
            if c.is_ascii_digit() || matches!(c, '-' | '+' | '.' | 'e' | 'E') {
                self.bump();
            } else {
                break;
            }
        }
        let text = &self.text[from..self.at];
        text.parse::<serde_json::Number>()
            .map(Value::Number)
            .map_err(|_| SyntaxError {
                pos: start,
                message: format!("`{text}` is not a valid number"),
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(text: &str) -> Value {
        parse(text).unwrap().value
    }

    #[test]
    fn comments_and_trailing_commas_are_accepted() {
        let value =
            ok("// head\n{\n  /* a */ \"a\": [1, 2,], // tail\n  \"b\": \"x // y /* z */\",\n}\n");
        let Value::Object(entries) = value else {
            panic!("not an object")
        };
        assert_eq!(entries[0].key, "a");
        assert_eq!(
            entries[0].key_pos,
            Pos {
                line: 3,
                column: 11
            }
        );
        assert_eq!(
            entries[1].node.value,
            Value::String("x // y /* z */".into())
        );
    }

    #[test]
    fn keys_keep_document_order_and_escapes_decode() {
        let Value::Object(entries) = ok(r#"{"z": 1, "a": "\u00e9\n\"", "m": null}"#) else {
            panic!("not an object")
        };
        let keys: Vec<_> = entries.iter().map(|e| e.key.as_str()).collect();
        assert_eq!(keys, ["z", "a", "m"]);
        assert_eq!(entries[1].node.value, Value::String("é\n\"".into()));
    }

    #[test]
    fn errors_carry_line_and_column() {
        let error = parse("{\n  \"a\": 1\n  \"b\": 2\n}").unwrap_err();
        assert_eq!(error.pos, Pos { line: 3, column: 3 });
        let error = parse("{\"a\": /* open").unwrap_err();
        assert_eq!(error.pos, Pos { line: 1, column: 7 });
        assert!(parse("[1,,]").is_err());
        assert!(parse("{,}").is_err());
        assert!(parse("01x").is_err());
        assert!(parse("{} {}").is_err());
        assert!(parse("tru").is_err());
    }

    #[test]
    fn numbers_and_literals_parse() {
        assert_eq!(ok("-1.5e3"), Value::Number("-1.5e3".parse().unwrap()));
        assert_eq!(ok(" true "), Value::Bool(true));
        assert_eq!(ok("null"), Value::Null);
    }

    fn deep() -> bool {
        std::env::var_os("TACKLE_DEEP").is_some()
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(if deep() { 512 } else { 32 }))]

        /// Any nesting of objects and arrays, with comments and trailing commas, parses when it
        /// is within the bound and is a positioned error past it; never a deeper stack.
        #[test]
        fn deep_nesting_is_bounded(
            openers in proptest::collection::vec(proptest::prelude::any::<bool>(), 1..64),
            depth in 1usize..if deep() { 1_000_000 } else { 200_000 },
            closed in proptest::prelude::any::<bool>(),
        ) {
            let mut text = String::new();
            for level in 0..depth {
                if openers[level % openers.len()] {
                    text.push_str("{ // c\n\"k\": ");
                } else {
                    text.push_str("[ /* c */ ");
                }
            }
            text.push('1');
            if closed {
                for level in (0..depth).rev() {
                    text.push_str(if openers[level % openers.len()] { ",}" } else { ",]" });
                }
            }
            match parse(&text) {
                Ok(_) => proptest::prop_assert!(depth <= MAX_DEPTH && closed),
                Err(error) if depth > MAX_DEPTH => {
                    proptest::prop_assert!(error.message.contains("nested too deeply"), "{error:?}");
                }
                Err(_) => proptest::prop_assert!(!closed),
            }
        }
    }
}
