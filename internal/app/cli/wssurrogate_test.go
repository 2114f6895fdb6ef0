package cli_test

import (
	"path/filepath"
	"testing"
)

// A result whose string holds a lone surrogate escape (JSON allows it,
// JavaScript strings hold it) is stored as sent, not with U+FFFD in its
// place: ws get --as-sent gives back the JSON string byte for byte
// (issue 49).
func TestWSGetAsSentLoneSurrogate(t *testing.T) {
	for _, tt := range []struct{ name, sent string }{
		{"high half alone", `"before \ud800 after"`},
		{"low half alone", `"x\udc00y"`},
		{"high half before a letter escape", `"a\ud83d\u0041b"`},
		{"one line and many", `"line 1\nline 2 \udfff\nline 3"`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ws := filepath.Join(t.TempDir(), "ws")
			in := `[{"role":"user","content":"go"},{"role":"assistant","content":[{"type":"tool_use","id":"toolu_1","name":"Bash","input":{}}]},` +
				`{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":` + tt.sent + `}]}]`
			if code, _, errs := runCLI(t, in, "ws", "offload", "--workspace", ws); code != 0 {
				t.Fatal(errs)
			}
			if code, out, errs := runCLI(t, "", "ws", "get", "--as-sent", "--workspace", ws, "tool_result_toolu_1"); code != 0 || out != tt.sent {
				t.Errorf("ws get --as-sent: exit %d, %q (%s); want %q", code, out, errs, tt.sent)
			}
		})
	}
}
