package compact

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// FormatCall writes a tool call as a readable call rather than JSON, as
// Render shows it to a model summarizer:
//
//	Bash(command: go test ./..., description: Run the tests)
//
// Members keep their order. A string is written as is when it is one short
// line; quoted (Go syntax) when it is empty, or holds ", " or ")"; and as
// an indented block under its name when it has several lines. Arrays of
// scalars are joined with ", "; objects inside arrays become one "- " line
// each (a todo list). Strings longer than maxChars characters keep their
// beginning and end (maxChars ≤ 0 means DefaultMaxResultChars). An input
// that is not a JSON object is written after the name as it is.
func FormatCall(name string, input []byte, maxChars int) string {
	if maxChars <= 0 {
		maxChars = DefaultMaxResultChars
	}
	input = bytes.TrimSpace(input)
	members, ok := objectMembers(input)
	if !ok {
		if len(input) == 0 || string(input) == "null" {
			return name + "()"
		}
		return name + " " + shorten(string(input), maxChars)
	}
	var inline []string
	var blocks []string
	for _, m := range members {
		v, multi := formatValue(m.value, maxChars)
		if multi {
			blocks = append(blocks, m.key+":\n"+indentBlock(v, "  "))
		} else {
			inline = append(inline, m.key+": "+v)
		}
	}
	s := name + "(" + strings.Join(inline, ", ") + ")"
	if len(blocks) > 0 {
		s += "\n" + indentBlock(strings.Join(blocks, "\n"), "  ")
	}
	return s
}

// callArgs is the one-line form of a call's arguments, each string at most
// max characters: "command: ls, path: /a".
func callArgs(input []byte, max int) string {
	members, ok := objectMembers(bytes.TrimSpace(input))
	if !ok {
		if !utf8.Valid(input) {
			return ""
		}
		return clip(string(input), max)
	}
	var parts []string
	for _, m := range members {
		v, _ := formatValue(m.value, max)
		parts = append(parts, m.key+": "+clip(v, max))
	}
	return strings.Join(parts, ", ")
}

type member struct {
	key   string
	value json.RawMessage
}

// objectMembers returns the members of a JSON object in order.
func objectMembers(raw []byte) ([]member, bool) {
	if len(raw) == 0 || raw[0] != '{' {
		return nil, false
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil, false
	}
	var out []member
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil, false
		}
		key, _ := t.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, false
		}
		out = append(out, member{key, v})
	}
	return out, true
}

// formatValue writes one JSON value readably; multi reports a value that
// takes several lines.
func formatValue(raw json.RawMessage, maxChars int) (string, bool) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return "", false
	}
	switch raw[0] {
	case '"':
		var s string
		if json.Unmarshal(raw, &s) != nil {
			return string(raw), false
		}
		s = shorten(s, maxChars)
		if strings.Contains(strings.TrimRight(s, "\n"), "\n") {
			return strings.TrimRight(s, "\n"), true
		}
		s = strings.TrimRight(s, "\n")
		if s == "" || strings.Contains(s, ", ") || strings.ContainsAny(s, ")") || utf8.RuneCountInString(s) > 200 {
			return strconv.Quote(s), false
		}
		return s, false
	case '[':
		var elems []json.RawMessage
		if json.Unmarshal(raw, &elems) != nil {
			return string(raw), false
		}
		var parts []string
		objects := false
		for _, e := range elems {
			e = bytes.TrimSpace(e)
			if len(e) > 0 && e[0] == '{' {
				objects = true
			}
		}
		for _, e := range elems {
			if objects {
				members, ok := objectMembers(bytes.TrimSpace(e))
				if !ok {
					v, _ := formatValue(e, maxChars)
					parts = append(parts, "- "+v)
					continue
				}
				var kv []string
				for _, m := range members {
					v, _ := formatValue(m.value, maxChars)
					kv = append(kv, m.key+": "+strings.ReplaceAll(v, "\n", " "))
				}
				parts = append(parts, "- "+strings.Join(kv, ", "))
				continue
			}
			v, _ := formatValue(e, maxChars)
			parts = append(parts, strings.ReplaceAll(v, "\n", " "))
		}
		if objects {
			return strings.Join(parts, "\n"), len(parts) > 0
		}
		return "[" + strings.Join(parts, ", ") + "]", false
	case '{':
		members, ok := objectMembers(raw)
		if !ok {
			return string(raw), false
		}
		var kv []string
		for _, m := range members {
			v, _ := formatValue(m.value, maxChars)
			kv = append(kv, m.key+": "+strings.ReplaceAll(v, "\n", " "))
		}
		return "{" + strings.Join(kv, ", ") + "}", false
	}
	return string(raw), false // number, true, false, null
}

func indentBlock(s, pad string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		if l != "" {
			lines[i] = pad + l
		}
	}
	return strings.Join(lines, "\n")
}

// callLine is FormatCall for a call with an id, as Render writes it.
func callLine(id, name string, input []byte, maxChars int) string {
	s := FormatCall(name, input, maxChars)
	if id != "" {
		s = fmt.Sprintf("[call %s] %s", id, s)
	}
	return s
}
