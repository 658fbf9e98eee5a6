//! The host's status-line payload, one copy for the tests and the bench: shaped as its docs
//! show it and as the 2.1.332 client sent it (docs/real-host.md, "The status line under the
//! interactive client": no `hook_event_name`).

use std::path::Path;

/// The payload for a session whose working folder is `dir`.
pub fn payload(dir: &Path) -> Vec<u8> {
    serde_json::json!({
        "session_id": "0c1f5d6e-4a1b-4c55-9a53-2c7d0b1f3e21",
        "transcript_path": "/home/ana/.claude/projects/-wc/0c1f5d6e-4a1b-4c55-9a53-2c7d0b1f3e21.jsonl",
        "cwd": dir,
        "model": {"id": "claude-opus-4-1", "display_name": "Opus"},
        "workspace": {"current_dir": dir, "project_dir": dir},
        "version": "2.1.332",
        "output_style": {"name": "default"},
        "cost": {"total_cost_usd": 0.01, "total_duration_ms": 4500, "total_api_duration_ms": 2300, "total_lines_added": 0, "total_lines_removed": 0},
        "exceeds_200k_tokens": false
    })
    .to_string()
    .into_bytes()
}
