package cli_test

import (
	"strings"
	"testing"
)

// A database password never reaches an error message, in the URL's user
// info or its query (issue 24: ?password= was printed).
func TestStorePasswordNeverPrinted(t *testing.T) {
	for _, store := range []string{
		"postgres://u:s3cret-pw@127.0.0.1:1/db?sslmode=disable&connect_timeout=1",
		"postgres://127.0.0.1:1/db?password=s3cret-pw&sslmode=disable&connect_timeout=1",
	} {
		code, out, errOut := runCLI(t, "", "ws", "ls", "--store", store)
		if code == 0 {
			t.Fatalf("ws ls on a closed port exited 0")
		}
		if strings.Contains(out+errOut, "s3cret-pw") {
			t.Fatalf("the password was printed: %s", errOut)
		}
	}
}

// agentctx mcp --http on a non-loopback address needs a token (issue 24:
// it served every interface with no authentication).
func TestMCPHTTPNeedsATokenOffLoopback(t *testing.T) {
	t.Setenv("AGENTCTX_TOKEN", "")
	code, _, errOut := runCLI(t, "", "mcp", "--workspace", t.TempDir(), "--http", "0.0.0.0:0")
	if code != 2 || !strings.Contains(errOut, "token") {
		t.Fatalf("exit %d: %s", code, errOut)
	}
}
