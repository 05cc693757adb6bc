//! A name as it may stand in a folded stack, whoever read it (ELF symbols, a JIT's perf map,
//! `comm`).

/// A name as a folded frame: `;` separates frames and a line ends a stack.
pub(super) fn clean(name: &str) -> String {
    name.chars()
        .map(|c| match c {
            ';' => ':',
            c if c.is_control() => ' ',
            c => c,
        })
        .collect()
}
