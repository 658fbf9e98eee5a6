//! The secret corpus (issue 34, acceptance 3): fake tokens of the scanner's kinds, as the
//! checklist's secret tests plant them, each with its random part (the fixed prefix such as
//! `ghp_` aside). No token, and no 8-character run of a random part, may leave the machine
//! by any edge: the notify command and the Notification hook, saved-aside contents, file
//! names and commit messages, working-copy paths, and a mirror's claims.

/// Characters of a random part that count as a leak when found together.
pub const LEAK_RUN_CHARS: usize = 8;

/// Each token and its random part.
pub fn corpus() -> Vec<(String, String)> {
    let random = |t: &str, prefix: &str| (t.to_string(), t[prefix.len()..].to_string());
    vec![
        random("ghp_Zk3x9QvT2mLp8RwY4nB6cD1eF7gH0jK5aS2d", "ghp_"),
        random("AKIAQX7T2M9LPW4RZ8NB", "AKIA"),
        random("xoxb-2415387760-4129935548113-p7QsVx2LmN9rT4wYzK8bC1dF", "xoxb-"),
        random("glpat-x9Qv2mLp8RwY4nB6cD1e", "glpat-"),
    ]
}

/// The first [`LEAK_RUN_CHARS`]-character run of `random` that `haystack` holds.
pub fn leaked_run(haystack: &str, random: &str) -> Option<String> {
    let chars: Vec<char> = random.chars().collect();
    chars.windows(LEAK_RUN_CHARS).map(|w| w.iter().collect::<String>()).find(|w| haystack.contains(w.as_str()))
}
