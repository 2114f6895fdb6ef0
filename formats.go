package agentctx

// FormatInfo describes one input shape agentctx reads: how it is
// recognised from the content, what Encode writes back, and a small
// example document.
type FormatInfo struct {
	Format     Format `json:"format"`      // the format's name, as --format and the reports spell it
	Name       string `json:"name"`        // the shape, for a person
	DetectedBy string `json:"detected_by"` // how it is recognised from the content
	WrittenAs  string `json:"written_as"`  // what the commands write back for it
	Example    string `json:"example"`     // a small input of the shape
}

// Formats returns every input shape ReadDocument accepts, in the order it
// tells them apart. Each example reads as its format. The slice is new on
// every call. transcript.Formats lists these and the agent transcripts.
func Formats() []FormatInfo {
	return []FormatInfo{
		{
			Format:     FormatArray,
			Name:       "JSON array of messages (Anthropic or OpenAI chat)",
			DetectedBy: "a top-level array whose elements are not OpenHands events",
			WrittenAs:  "the same array, byte for byte (compacted)",
			Example:    `[{"role":"user","content":"List the files."},{"role":"assistant","content":[{"type":"tool_use","id":"toolu_1","name":"bash","input":{"command":"ls"}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":"go.mod\nmain.go"}]}]`,
		},
		{
			Format:     FormatObject,
			Name:       "request body (Anthropic Messages or OpenAI chat completions)",
			DetectedBy: `a top-level object with "messages" and no mini-swe-agent marks`,
			WrittenAs:  `the same object, "messages" replaced; every other member (system, model, tools, ...) kept`,
			Example:    `{"model":"gpt-4.1","messages":[{"role":"system","content":"You are terse."},{"role":"user","content":"Hi"}]}`,
		},
		{
			Format:     FormatJSONL,
			Name:       "JSON Lines of messages",
			DetectedBy: `a sequence of objects, most of them with a "role"`,
			WrittenAs:  "one message per line, byte for byte (compacted)",
			Example:    "{\"role\":\"user\",\"content\":\"Run the tests.\"}\n{\"role\":\"assistant\",\"content\":\"All 12 pass.\"}\n",
		},
	}
}
