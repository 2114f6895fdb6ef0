package config_test

import (
	"fmt"

	"github.com/spf13/pflag"

	"github.com/agentctx/agentctx/internal/app/config"
)

// A command's flags settled from the environment and a file: the
// command line left --limit and --listen unset.
func ExampleSettle() {
	file, err := config.Parse("config.json", []byte(`{"limit": 150000, "proxy": {"listen": ":9000"}}`))
	if err != nil {
		fmt.Println(err)
		return
	}
	fs := pflag.NewFlagSet("proxy", pflag.ContinueOnError)
	fs.Int("limit", 200000, "context window")
	fs.String("listen", "127.0.0.1:8787", "address")
	fs.String("namespace", "default", "namespace")
	fs.Parse([]string{"--namespace", "team"})
	settings, err := config.Settle(fs, config.Options{
		Command: []string{"proxy"},
		File:    file,
		Env: func(f *pflag.Flag) string {
			if f.Name == "limit" {
				return "AGENTCTX_LIMIT"
			}
			return ""
		},
		LookupEnv: func(k string) (string, bool) {
			return map[string]string{"AGENTCTX_LIMIT": "100000"}[k], k == "AGENTCTX_LIMIT"
		},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, s := range settings {
		fmt.Println(s.Name, s.Value, s.Source, s.Origin)
	}
	// Output:
	// limit 100000 env AGENTCTX_LIMIT
	// listen :9000 file config.json: proxy.listen
	// namespace team flag
}
