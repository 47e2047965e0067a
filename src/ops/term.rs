//! How the commands write for people: on a terminal, in a pipe, in the journal.
//!
//! * Colours and screen control (clear screen, bold, dim) only when the stream is a
//!   terminal, and colours never when `NO_COLOR` is set to anything non-empty
//!   (<https://no-color.org>). Piped, a command prints plain lines: no ESC byte at all.
//! * Width: `COLUMNS` when set (the shell's convention, and how a pipe is told a width),
//!   else the terminal's own width, else 80. Never below [`MIN_WIDTH`].
//! * Tables go through `comfy-table`, which measures the cells and wraps the widest
//!   columns to the width, instead of hand-padded `format!` columns that overflow as soon
//!   as a queue or host name is longer than planned.

use std::io::IsTerminal;

use comfy_table::{
    Attribute, Cell, CellAlignment, ContentArrangement, ContentLineStyle, LineStyle, Table,
    TableStyle,
};

/// Narrower than this, tables would wrap every word; we print at this width instead.
pub const MIN_WIDTH: u16 = 40;

/// psql's look: no borders, one space between columns, a dashed line under the header.
const PLAIN: TableStyle = TableStyle::new()
    .header_lines(ContentLineStyle::none().junction(' '))
    .header_separator(LineStyle::none().fill('-').junction(' '))
    .content_lines(ContentLineStyle::none().junction(' '));

/// The width used when neither `COLUMNS` nor a terminal says otherwise.
pub const DEFAULT_WIDTH: u16 = 80;

/// `NO_COLOR` set to a non-empty value: no colours, whatever the stream.
pub fn no_color() -> bool {
    std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty())
}

/// Colours for log lines written to stderr (tracing-subscriber's ANSI output).
pub fn stderr_colors() -> bool {
    std::io::stderr().is_terminal() && !no_color()
}

/// How to write one stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Output {
    /// Bold / dim styling.
    pub color: bool,
    /// A terminal: a view may clear the screen and redraw in place.
    pub live: bool,
    /// Columns every line fits in.
    pub width: u16,
}

impl Output {
    /// Standard output, as this process sees it.
    pub fn stdout() -> Self {
        let live = std::io::stdout().is_terminal();
        Output {
            color: live && !no_color(),
            live,
            width: width(live),
        }
    }

    /// Plain lines at `width` (files, tests).
    pub fn plain(width: u16) -> Self {
        Output {
            color: false,
            live: false,
            width: width.max(MIN_WIDTH),
        }
    }

    /// `\x1b[1m` `\x1b[2m` `\x1b[0m` when colours are on, else empty strings.
    pub fn styles(&self) -> (&'static str, &'static str, &'static str) {
        if self.color {
            ("\x1b[1m", "\x1b[2m", "\x1b[0m")
        } else {
            ("", "", "")
        }
    }

    /// Clear the screen and home the cursor, on a terminal only.
    pub fn clear(&self) -> &'static str {
        if self.live { "\x1b[H\x1b[2J" } else { "" }
    }

    /// A borderless table that fits `width`: bold header when colours are on; columns
    /// whose index is in `right` are right-aligned (numbers).
    pub fn table(&self, header: &[&str], right: &[usize]) -> Table {
        let mut table = Table::new();
        table
            .load_style(PLAIN)
            .set_content_arrangement(ContentArrangement::Dynamic)
            .set_width(self.width)
            .set_truncation_indicator("~")
            // The decision is ours (terminal, NO_COLOR), not comfy-table's own probe.
            .force_no_tty();
        if self.color {
            table.enforce_styling();
        }
        table.set_header(header.iter().map(|h| {
            let cell = Cell::new(h);
            if self.color {
                cell.add_attribute(Attribute::Bold)
            } else {
                cell
            }
        }));
        for (k, column) in table.column_iter_mut().enumerate() {
            // The style's junction is the only space between columns.
            column.set_padding((0, 0));
            if right.contains(&k) {
                column.set_cell_alignment(CellAlignment::Right);
            }
        }
        table
    }

    /// `text` wrapped to the width; lines after the first are indented by `indent`.
    pub fn wrap(&self, text: &str, indent: &str) -> String {
        let options = textwrap::Options::new(usize::from(self.width)).subsequent_indent(indent);
        textwrap::fill(text, options)
    }
}

/// A table as lines without trailing blanks (a borderless table pads its last column).
pub fn table_text(table: &Table) -> String {
    let mut out = String::new();
    for line in table.lines() {
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

fn width(terminal: bool) -> u16 {
    let from_env = std::env::var("COLUMNS")
        .ok()
        .and_then(|c| c.trim().parse::<u16>().ok())
        .filter(|&c| c > 0);
    let from_terminal = || {
        terminal
            .then(crossterm::terminal::size)
            .and_then(Result::ok)
            .map(|(columns, _)| columns)
            .filter(|&c| c > 0)
    };
    from_env
        .or_else(from_terminal)
        .unwrap_or(DEFAULT_WIDTH)
        .max(MIN_WIDTH)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_wide_table_is_wrapped_to_the_width_and_plain() {
        let out = Output::plain(80);
        let mut table = out.table(&["QUEUE", "POOL", "NEXT ROUND", "LEADER"], &[1]);
        table.add_row(vec![
            "a_queue_with_a_rather_long_name",
            "1234",
            "waiting for enough players for one match (and then some more words)",
            "replica-on-a-host-with-a-long-name-4711 (term 12)",
        ]);
        let text = table_text(&table);
        assert!(!text.contains('\x1b'), "{text}");
        for line in text.lines() {
            assert!(line.chars().count() <= 80, "{} > 80: {line:?}", line.len());
        }
        assert!(text.contains("1234"), "{text}");
        let narrow = Output::plain(10);
        assert_eq!(narrow.width, MIN_WIDTH, "never below the minimum");
    }

    #[test]
    fn styles_and_clear_only_when_asked_for() {
        let plain = Output::plain(80);
        assert_eq!(plain.styles(), ("", "", ""));
        assert_eq!(plain.clear(), "");
        let tty = Output {
            color: true,
            live: true,
            width: 80,
        };
        assert!(tty.styles().0.starts_with('\x1b'));
        assert!(tty.clear().starts_with('\x1b'));
        let mut table = tty.table(&["A"], &[]);
        table.add_row(vec!["x"]);
        assert!(table_text(&table).contains('\x1b'), "bold header in colour");
    }
}
