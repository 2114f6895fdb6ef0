package cli_test

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/agentctx/agentctx"
	"github.com/agentctx/agentctx/transcript"
)

func TestFormatsCommand(t *testing.T) {
	code, out, errOut := runCLI(t, "", "formats")
	if code != 0 || errOut != "" {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	var got struct {
		Formats []agentctx.FormatInfo `json:"formats"`
	}
	jsonKeys(t, out, "formats")
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatal(err)
	}
	if len(got.Formats) != len(transcript.Formats()) || got.Formats[0].Example == "" {
		t.Errorf("formats %+v", got.Formats)
	}
	if code, _, errOut := runCLI(t, "", "formats", "x"); code != 2 || !strings.Contains(errOut, "agentctx:") {
		t.Errorf("extra argument: exit %d, %q", code, errOut)
	}
}

// TestFormatsReadme: the README's "Input formats" section is what
// formats --markdown prints, so the two never drift apart.
func TestFormatsReadme(t *testing.T) {
	code, md, _ := runCLI(t, "", "formats", "--markdown")
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	readme, err := os.ReadFile("../../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(readme), "## Input formats\n") || !strings.Contains(string(readme), md) {
		t.Errorf("README.md lacks the output of agentctx formats --markdown under \"## Input formats\":\n%s", md)
	}
	for _, f := range transcript.Formats() {
		if !strings.Contains(md, "| `"+string(f.Format)+"` |") || !strings.Contains(md, "\n`"+string(f.Format)+"`:\n") {
			t.Errorf("markdown lacks %s", f.Format)
		}
	}
}
