//! What a benchmark printed, kept for its `*-summary.txt` file.

/// The lines a benchmark printed, in order.
#[derive(Debug, Default)]
pub struct Summary(String);

impl Summary {
    /// Prints `line` and keeps it.
    pub fn say(&mut self, line: String) {
        println!("{line}");
        self.0.push_str(&line);
        self.0.push('\n');
    }

    /// Everything said so far.
    pub fn text(&self) -> &str {
        &self.0
    }
}
