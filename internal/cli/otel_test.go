package cli_test

import (
	"strings"
	"testing"

	"github.com/agentctx/agentctx/internal/cli"
)

// --otel with an OTLP protocol the exporter does not speak is a usage
// error, one line, before anything listens.
func TestProxyOtelProtocolRefused(t *testing.T) {
	t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")
	t.Chdir(t.TempDir())
	code, out, errs := runCLI(t, "", "proxy", "--otel", "--listen", "127.0.0.1:0")
	if code != cli.ExitUsage || out != "" || strings.Count(strings.TrimSpace(errs), "\n") != 0 || !strings.Contains(errs, "OTEL_EXPORTER_OTLP_PROTOCOL") {
		t.Errorf("exit %d, stdout %q, stderr %q; want exit 2, one line naming the variable", code, out, errs)
	}
}

// So is a value of an OTLP exporter variable that cannot be used.
func TestProxyOtelBadVariable(t *testing.T) {
	for k, v := range map[string]string{
		"OTEL_EXPORTER_OTLP_TIMEOUT":         "5s",
		"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "collector:4318",
		"OTEL_EXPORTER_OTLP_COMPRESSION":     "zstd",
	} {
		t.Run(k, func(t *testing.T) {
			t.Setenv(k, v)
			t.Chdir(t.TempDir())
			code, out, errs := runCLI(t, "", "proxy", "--otel", "--listen", "127.0.0.1:0")
			if code != cli.ExitUsage || out != "" || strings.Count(strings.TrimSpace(errs), "\n") != 0 || !strings.Contains(errs, v) {
				t.Errorf("exit %d, stdout %q, stderr %q; want exit 2, one line naming the value", code, out, errs)
			}
		})
	}
}
