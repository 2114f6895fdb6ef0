package standin

import "testing"

func TestIsPlaceholder(t *testing.T) {
	for _, tc := range []struct {
		text string
		want bool
	}{
		{Seed, true},
		{English, true},
		{"  " + English + "\n", true},
		{Seed + "\n[Stored whole: get_knowledge_by_id(artifact_id=\"tool_result_x\")]", true},
		{English + "\n[Stored whole: get_knowledge_by_id(artifact_id=\"tool_result_x\")]", true},
		{English + " And then the build failed.", false},
		{"ok\n" + English, false},
		{"", false},
		{"This command's output", false},
	} {
		if got := IsPlaceholder(tc.text); got != tc.want {
			t.Errorf("IsPlaceholder(%q) = %v, want %v", tc.text, got, tc.want)
		}
	}
	if !Contains("- Bash: "+English) || !Contains("x "+Seed) || Contains("out of date") {
		t.Error("Contains misses a placeholder or finds one that is not")
	}
}
