package transcript

import "github.com/agentctx/agentctx"

// Formats returns every input shape ParseDocument reads, in the order it
// tells them apart: the request formats of agentctx.Formats and the agent
// transcripts. Each example reads as its format. The slice is new on every
// call.
func Formats() []agentctx.FormatInfo {
	req := agentctx.Formats() // array, object, JSON Lines
	return []agentctx.FormatInfo{
		req[0],
		req[1],
		{
			Format:     FormatMiniSWEAgent,
			Name:       "mini-swe-agent trajectory (.traj.json)",
			DetectedBy: `an object with "messages" and trajectory_format "mini-swe-agent…", info.mini_version, or a role "exit" message`,
			WrittenAs:  `the same object; the final role "exit" message is kept in the file and never sent to the model`,
			Example:    `{"info":{"exit_status":"Submitted","mini_version":"1.9.0"},"messages":[{"role":"system","content":"You can run shell commands."},{"role":"user","content":"Fix the bug."},{"role":"assistant","content":"THOUGHT: Fixed. Submitting.\n\necho COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"},{"role":"exit","content":"","extra":{"exit_status":"Submitted"}}],"trajectory_format":"mini-swe-agent-1"}`,
		},
		{
			Format:     FormatSWEAgent,
			Name:       "SWE-agent trajectory (.traj) and the same shape from other harnesses",
			DetectedBy: `a top-level object whose "history" holds messages (role), not OpenHands events`,
			WrittenAs:  `the same object, "history" replaced; trajectory, info, replay_config kept; tool messages keep their "tool_call_ids" list`,
			Example:    `{"trajectory":[],"history":[{"role":"system","content":"You are an autonomous programmer.","message_type":"system_prompt"},{"role":"assistant","content":"Look first.","tool_calls":[{"id":"call_1","type":"function","function":{"name":"bash","arguments":"{\"command\":\"ls\"}"}}],"message_type":"action"},{"role":"tool","content":[{"type":"text","text":"OBSERVATION:\nsetup.py"}],"tool_call_ids":["call_1"],"message_type":"observation"}],"info":{"exit_status":"submitted"}}`,
		},
		req[2],
		{
			Format:     FormatClaudeCode,
			Name:       "Claude Code session .jsonl (main session or subagent's sidechain file)",
			DetectedBy: `a sequence of objects, most of them records with a "type" and no "role"`,
			WrittenAs:  "the file whole: records that are not messages where they were, unchanged messages as their records, a changed one in its first record, new ones (summaries) as new records; parentUuid links kept",
			Example:    "{\"type\":\"user\",\"message\":{\"role\":\"user\",\"content\":\"Fix the test.\"},\"uuid\":\"u1\",\"timestamp\":\"2026-11-20T09:00:00.000Z\",\"isSidechain\":false}\n{\"type\":\"progress\",\"uuid\":\"p1\",\"timestamp\":\"2026-11-20T09:00:00.500Z\"}\n{\"type\":\"assistant\",\"message\":{\"id\":\"msg_1\",\"role\":\"assistant\",\"content\":[{\"type\":\"text\",\"text\":\"Done.\"}]},\"uuid\":\"a1\",\"timestamp\":\"2026-11-20T09:00:02.000Z\",\"isSidechain\":false}\n",
		},
		{
			Format:     FormatOpenHands,
			Name:       "OpenHands evaluation output.jsonl (or a JSON array of events)",
			DetectedBy: `records with a "history" of events (source with action or observation), or an array of such events`,
			WrittenAs:  "each conversation as its record, every member kept: unchanged messages as their events, a changed tool result in its observation, new messages as new events",
			Example:    `{"instance_id":"calc-1","history":[{"id":0,"source":"user","action":"message","args":{"content":"Fix calc."},"timestamp":"2026-01-15T10:00:00"},{"id":1,"source":"agent","action":"run","args":{"command":"pytest","thought":""},"timestamp":"2026-01-15T10:00:02","tool_call_metadata":{"function_name":"execute_bash","tool_call_id":"call_1"}},{"id":2,"source":"agent","observation":"run","content":"1 passed","extras":{"metadata":{"exit_code":0}},"timestamp":"2026-01-15T10:00:03","tool_call_metadata":{"function_name":"execute_bash","tool_call_id":"call_1"}}]}` + "\n",
		},
	}
}
