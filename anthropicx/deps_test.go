package anthropicx_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestPipelineLinksNoSDK checks that a program importing only pipeline (or
// the packages under it) links neither model SDK nor the MCP SDK: they come
// with anthropicx, openaix and mcpserver only.
func TestPipelineLinksNoSDK(t *testing.T) {
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command")
	}
	sdks := []string{"github.com/anthropics/anthropic-sdk-go", "github.com/openai/openai-go", "github.com/modelcontextprotocol/go-sdk"}
	for _, pkg := range []string{"github.com/agentctx/agentctx", "github.com/agentctx/agentctx/pipeline", "github.com/agentctx/agentctx/workspace"} {
		out, err := exec.CommandContext(t.Context(), gobin, "list", "-deps", pkg).Output()
		if err != nil {
			t.Fatalf("go list -deps %s: %v", pkg, err)
		}
		for _, dep := range strings.Fields(string(out)) {
			for _, sdk := range sdks {
				if strings.HasPrefix(dep, sdk) {
					t.Errorf("%s links %s", pkg, dep)
				}
			}
		}
	}
	// Each adapter links its own SDK only.
	for pkg, not := range map[string]string{
		"github.com/agentctx/agentctx/anthropicx": "github.com/openai/openai-go",
		"github.com/agentctx/agentctx/openaix":    "github.com/anthropics/anthropic-sdk-go",
	} {
		out, err := exec.CommandContext(t.Context(), gobin, "list", "-deps", pkg).Output()
		if err != nil {
			t.Fatalf("go list -deps %s: %v", pkg, err)
		}
		if strings.Contains(string(out), not) {
			t.Errorf("%s links %s", pkg, not)
		}
	}
}
